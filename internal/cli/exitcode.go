package cli

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
