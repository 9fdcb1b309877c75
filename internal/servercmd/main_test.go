package servercmd

import (
	"os"
	"testing"
)

// TestMain makes this test program its own game worker: serve runs the
// program it is (os.Executable) as hoster-server worker, so the tests'
// servers run their games in worker processes as hoster-server does.
//
// With HOSTER_TEST_SERVER=1 it is hoster-server itself, for the tests that
// need a server they can kill -9 (the fleet's).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "worker" || os.Getenv("HOSTER_TEST_SERVER") == "1") {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
