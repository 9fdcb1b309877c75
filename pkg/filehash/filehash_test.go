package filehash

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
)

func TestSumMatchesSHA256AndReuses(t *testing.T) {
	var x Hasher
	for _, size := range []int{0, 1, bufSize - 1, bufSize, bufSize + 1, 3*bufSize + 7, 5} {
		data := bytes.Repeat([]byte{byte(size)}, size)
		want := sha256.Sum256(data)
		got, n, err := x.Sum(bytes.NewReader(data))
		if err != nil || n != int64(size) || got != hex.EncodeToString(want[:]) {
			t.Fatalf("size %d: got %s %d %v, want %x", size, got, n, err, want)
		}
	}
}

func TestSumReportsReadErrors(t *testing.T) {
	var x Hasher
	boom := errors.New("boom")
	_, _, err := x.Sum(io.MultiReader(strings.NewReader("abc"), iotestErr{boom}))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	// The hasher is usable again after a failed read.
	got, _, _ := x.Sum(strings.NewReader(""))
	if got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("empty hash after an error: %s", got)
	}
}

type iotestErr struct{ err error }

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }

func BenchmarkSum(b *testing.B) {
	data := make([]byte, 1<<20)
	var x Hasher
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		x.Sum(bytes.NewReader(data))
	}
}

func TestEachVisitsEveryIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 3, 1000} {
		seen := make([]int32, n)
		var mu sync.Mutex
		hashers := map[*Hasher]bool{}
		Each(n, func(i int, x *Hasher) {
			mu.Lock()
			seen[i]++
			hashers[x] = true
			mu.Unlock()
		})
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("n=%d: index %d visited %d times", n, i, c)
			}
		}
		if len(hashers) > Workers() {
			t.Fatalf("n=%d: %d hashers for %d workers", n, len(hashers), Workers())
		}
	}
}
