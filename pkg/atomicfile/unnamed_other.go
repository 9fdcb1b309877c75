//go:build !linux

package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"sync/atomic"
)

// noUnnamed: this system has no unnamed files (unnamed_linux.go).
var noUnnamed atomic.Bool

func createUnnamed(*os.Root, string, fs.FileMode) (f, folder *os.File) { return nil, nil }

func linkAt(f, folder *os.File, name string) error { return errors.ErrUnsupported }
