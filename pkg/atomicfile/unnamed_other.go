//go:build !linux

package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync/atomic"
)

// noUnnamed: this system has no unnamed files (unnamed_linux.go).
var noUnnamed atomic.Bool

func unnamedOK() bool { return false }

func createUnnamed(*os.File, fs.FileMode) *os.File { return nil }

func linkAt(f, folder *os.File, name string) error { return errors.ErrUnsupported }

// locksStages: staged folders are not locked here; a StageFolder removes
// every hidden folder of its folder it finds.
const locksStages = false

func lockStage(string) *os.File { return nil }

func tryLock(*os.File) bool { return false }

func renameNoReplace(old, new string) error { return renameIfFree(old, new) }

// plainAt: staged files are written through the folder's os.Root here.
const plainAt = false

func copyPlainAt(*os.File, string, io.Reader, []byte, fs.FileMode, func(int64) error, *atomic.Uint32) (int64, error) {
	return 0, errors.ErrUnsupported
}
