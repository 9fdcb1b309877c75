// Command gentree writes a sites tree for the benchmarks: 4 domains x 5
// games, each game a hoster-game.json and files of mixed sizes (most a few
// KiB, some hundreds of KiB, a few MiB), adding up to the asked total.
// With -modify it changes 1% of the files and deletes another 1% instead.
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	dir := flag.String("dir", "", "where to write the tree")
	files := flag.Int("files", 2000, "number of files")
	mib := flag.Int("mib", 200, "total size in MiB")
	modify := flag.Bool("modify", false, "change 1% of an existing tree's files and delete 1%")
	flag.Parse()
	if *dir == "" {
		log.Fatal("gentree: -dir is required")
	}
	rng := rand.New(rand.NewPCG(7, 11))
	if *modify {
		var all []string
		filepath.WalkDir(*dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".bin") {
				all = append(all, p)
			}
			return nil
		})
		sort.Strings(all)
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		n := len(all) / 100
		for _, p := range all[:n] {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				log.Fatal(err)
			}
			f.WriteAt([]byte(fmt.Sprintf("changed %d", rng.Uint64())), 0)
			f.Close()
		}
		for _, p := range all[n : 2*n] {
			os.Remove(p)
		}
		fmt.Printf("modified %d files, deleted %d\n", n, n)
		return
	}
	// Sizes: 1% large (1.5% of files' bytes each), 9% medium, 90% small,
	// scaled to the total.
	sizes := make([]float64, *files)
	var sum float64
	for i := range sizes {
		switch {
		case i%100 == 0:
			sizes[i] = 400 + rng.Float64()*400
		case i%10 == 0:
			sizes[i] = 40 + rng.Float64()*60
		default:
			sizes[i] = 1 + rng.Float64()*15
		}
		sum += sizes[i]
	}
	total := float64(*mib) * (1 << 20)
	buf := make([]byte, 32<<20)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for g := 0; g < 20; g++ {
		gameDir := filepath.Join(*dir, fmt.Sprintf("site%d.example", g/5), fmt.Sprintf("game%d", g%5))
		os.MkdirAll(gameDir, 0o755)
		os.WriteFile(filepath.Join(gameDir, "hoster-game.json"),
			[]byte(`{"tickRate": 20, "sendRate": 10, "capacity": 16, "origins": ["*"]}`), 0o644)
	}
	for i, s := range sizes {
		n := min(int(s/sum*total), len(buf))
		g := i % 20
		p := filepath.Join(*dir, fmt.Sprintf("site%d.example", g/5), fmt.Sprintf("game%d", g%5),
			fmt.Sprintf("assets/d%d/f%d.bin", i%17, i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		off := rng.IntN(len(buf) - n + 1)
		if err := os.WriteFile(p, buf[off:off+n], 0o644); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("wrote %d files, %d MiB, in 4 domains x 5 games\n", *files, *mib)
}
