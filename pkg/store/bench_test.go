package store

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// benchTree makes (once, reused across runs) a games tree of 20,000 files and
// about 1 GB: 20 files of 20 MiB, 180 of 2 MiB, the rest 1 to 24 KiB, spread
// over 4 domains x 5 games and a few folders. With -short it is 2,000 files.
func benchTree(b *testing.B) (dir string, files []string) {
	b.Helper()
	n := 20000
	if testing.Short() {
		n = 2000
	}
	dir = filepath.Join(os.TempDir(), fmt.Sprintf("hoster-bench-tree-%d", n))
	done := dir + ".complete"
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i++ {
		files = append(files, fmt.Sprintf("d%d.com/g%d/sub%d/f%d.bin", i%4, i%5, i%13, i))
	}
	if _, err := os.Stat(done); err == nil {
		return dir, files
	}
	os.RemoveAll(dir)
	buf := make([]byte, 20<<20)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for i, f := range files {
		size := 1<<10 + rng.IntN(23<<10)
		switch {
		case i%1000 == 0:
			size = 20 << 20
		case i%100 == 0:
			size = 2 << 20
		}
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		off := rng.IntN(len(buf) - size + 1)
		if err := os.WriteFile(p, buf[off:off+size], 0o644); err != nil {
			b.Fatal(err)
		}
	}
	os.WriteFile(done, nil, 0o644)
	return dir, files
}

func totalBytes(dir string, files []string) int64 {
	var n int64
	for _, f := range files {
		fi, _ := os.Stat(filepath.Join(dir, f))
		n += fi.Size()
	}
	return n
}

// plainSHA256 hashes every file with crypto/sha256 on `workers` goroutines:
// the floor a tree request is measured against.
func plainSHA256(dir string, files []string, workers int) {
	ch := make(chan string)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for f := range ch {
				fh, err := os.Open(filepath.Join(dir, f))
				if err != nil {
					continue
				}
				h := sha256.New()
				io.CopyBuffer(h, fh, buf)
				fh.Close()
			}
		}()
	}
	for _, f := range files {
		ch <- f
	}
	close(ch)
	wg.Wait()
}

func BenchmarkTree(b *testing.B) {
	dir, files := benchTree(b)
	size := totalBytes(dir, files)
	b.Logf("tree: %d files, %d MiB (page cache warm: the tree fits in memory)", len(files), size>>20)
	// Read everything once so every case starts from the same page cache.
	plainSHA256(dir, files, 2)

	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("crypto-sha256-%dworkers", workers), func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				plainSHA256(dir, files, workers)
			}
		})
	}
	b.Run("sha256sum-xargs-P2", func(b *testing.B) {
		if _, err := exec.LookPath("sha256sum"); err != nil {
			b.Skip("no sha256sum")
		}
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			cmd := exec.Command("sh", "-c", "find . -type f -name '*.bin' -print0 | xargs -0 -P2 -n 500 sha256sum >/dev/null")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	})
	b.Run("tree-first-request", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			s, err := Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			tree, err := s.Tree()
			if err != nil || len(tree) != len(files) {
				b.Fatalf("tree: %d entries, %v", len(tree), err)
			}
			s.Close()
		}
	})
	b.Run("tree-repeated-request", func(b *testing.B) {
		s, _ := Open(dir)
		defer s.Close()
		s.Tree()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if tree, err := s.Tree(); err != nil || len(tree) != len(files) {
				b.Fatalf("tree: %d entries, %v", len(tree), err)
			}
		}
	})
	b.Run("walk-and-stat-only", func(b *testing.B) {
		root, _ := os.OpenRoot(dir)
		defer root.Close()
		for i := 0; i < b.N; i++ {
			fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					root.Lstat(p)
				}
				return nil
			})
		}
	})
}
