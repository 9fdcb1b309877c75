package cli

import (
	"errors"

	"github.com/hoster-dev/hoster/pkg/apiclient"
)

// Exit statuses of the hoster command, as documented for users.
const (
	// ExitOK: everything asked for was done.
	ExitOK = 0
	// ExitFailed: something failed; the rest was still done and each failure
	// was named.
	ExitFailed = 1
	// ExitUsage: a usage or configuration error; nothing was done.
	ExitUsage = 2
	// ExitVersion: the client and server API versions differ.
	ExitVersion = 3
)

// exitError carries an exit status with the error that caused it; Main maps
// it with errors.As.
type exitError struct {
	code int
	err  error
	// op and path say what failed and where, for --json (failAt).
	op, path string
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withExit attaches an exit status to err.
func withExit(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// exitCode is the exit status for a command's error. A server certificate
// that does not verify is a configuration error (exit 2) wherever it
// surfaces: nothing was sent, and the fix is a pin, a trusted CA or the
// explicit --insecure-skip-verify. Anything cobra itself rejects (unknown
// flag, wrong arguments) is usage too.
func exitCode(err error) int {
	var untrusted *apiclient.UntrustedError
	var ee *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &untrusted):
		return ExitUsage
	case errors.As(err, &ee):
		return ee.code
	default:
		return ExitUsage
	}
}

// failAt attaches an exit status to err, with what was being done and
// where (the server's URL, the config file, ROOT), for the --json
// document's failure entry.
func failAt(code int, op, path string, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err, op: op, path: path}
}
