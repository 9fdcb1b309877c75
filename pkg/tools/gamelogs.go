package tools

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hoster-dev/hoster/pkg/layout"
)

// The game-log listing names every hour file of every game: 29,000 for a
// month of 40 games, each stat-ed for its size on every pull. So it is
// built for that: the folders of files (<domain>/<game>/hoster-processes/
// <process>) are found first, then read listFolders at once, each read
// once with a stat of each file relative to it (os.Root's ReadDir), and
// the answer is written as each folder's part of it is ready, in the
// folders' order, while the next ones are read. The folders are ordered
// by their path and a slash, so that the files come sorted by path as the
// contract wants them, without a sort of them all.

// listFolders is how many folders the game-log listing reads at once.
const listFolders = 4

func (h *handlers) gameLogs(w http.ResponseWriter, r *http.Request) {
	var folders []string
	root, err := h.gameLogsRoot()
	if err == nil {
		defer root.Close()
		folders = gameLogFolders(root, ".", 0)
		slices.Sort(folders)
	}
	parts := make([]chan []byte, len(folders))
	for i := range parts {
		parts[i] = make(chan []byte, 1)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(listFolders, len(folders)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(folders); i = int(next.Add(1) - 1) {
				parts[i] <- listFolder(root, folders[i])
			}
		})
	}
	defer wg.Wait()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(`{"files":[`)
	sep := false
	for _, p := range parts {
		b := <-p
		if len(b) == 0 {
			continue
		}
		if sep {
			bw.WriteByte(',')
		}
		bw.Write(b)
		sep = true
	}
	bw.WriteString("]}\n")
	bw.Flush()
}

// gameLogFolders lists the folders of game-log files inside dir of root,
// at depth (0: the root itself) below the root: the folders four levels
// down whose path is a layout.IsGameLogFolder. Only real folders are
// entered, no link to one.
func gameLogFolders(root *os.Root, dir string, depth int) []string {
	if depth == 4 {
		if layout.IsGameLogFolder(dir) {
			return []string{dir}
		}
		return nil
	}
	f, err := root.Open(dir)
	if err != nil {
		return nil
	}
	entries, _ := f.ReadDir(-1)
	f.Close()
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, gameLogFolders(root, path.Join(dir, e.Name()), depth+1)...)
		}
	}
	return out
}

// listFolder is the listing's entries of the files in the folder dir of
// root (a layout.IsGameLogFolder), sorted by name, comma-separated: each
// regular file whose name is a game-log hour file's, with its size.
func listFolder(root *os.Root, dir string) []byte {
	f, err := root.Open(dir)
	if err != nil {
		return nil
	}
	entries, _ := f.ReadDir(-1) // in a Root: each entry's Lstat comes with it
	f.Close()
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var b []byte
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if _, _, ok := layout.ParseGameLogFileName(e.Name()); !ok {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"path":`...)
		b = appendJSONString(b, dir+"/"+e.Name())
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, info.Size(), 10)
		b = append(b, '}')
	}
	return b
}

// appendJSONString appends s as encoding/json writes it: as it is when
// no byte of it needs escaping (the names hoster writes), else through
// encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
