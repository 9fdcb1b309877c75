//go:build !unix

package tools

import "os"

// openEntry opens name inside root as openIn does, as a batch entry.
func openEntry(_ *os.File, root *os.Root, name string) (entry, bool) { return openEntryIn(root, name) }
