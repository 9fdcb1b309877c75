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

func unnamedOK() bool { return false }

func createUnnamed(*os.File, fs.FileMode) *os.File { return nil }

func linkAt(f, folder *os.File, name string) error { return errors.ErrUnsupported }
