package servercmd

import (
	"os"
	"testing"
)

// TestMain makes this test program its own game worker: serve runs the
// program it is (os.Executable) as hoster-server worker, so the tests'
// servers run their games in worker processes as hoster-server does. It is
// also hoster-server serve, for the tests of a fleet of server processes.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "worker" || os.Args[1] == "serve") {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
