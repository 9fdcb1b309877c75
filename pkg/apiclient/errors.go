package apiclient

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/hoster-dev/hoster/pkg/api"
)

// Error is a failed request: what was being done, the HTTP status when
// there was an answer, and the server's message or the transport's error.
type Error struct {
	Op     string // e.g. "uploading example.com/arena/x.js"
	Status int    // 0 when no answer came
	Msg    string
	// Err, when set, is the cause (ErrNotFound, a *PinError, the context's
	// error); Msg is then empty.
	Err error
	// Reason is the machine-readable cause the server told beside its
	// message (api.CauseNoSpace), "" when it told none.
	Reason string
	// Transient is true for failures worth retrying: no answer, 5xx, 429.
	Transient bool
	// Attempts is how many times it was tried, when more than once.
	Attempts int
}

// Unreachable reports whether the failure says the server is not there to
// answer: no answer at all, or a server error (a 429 is an answer: slow
// down).
func (e *Error) Unreachable() bool { return e.Transient && e.Status != 429 }

// OutOfSpace reports whether the server said, by its machine-readable
// cause, that its disk is full.
func (e *Error) OutOfSpace() bool { return e.Reason == api.CauseNoSpace }

func (e *Error) Error() string { return e.Op + ": " + e.Cause() }

// Cause is the error without the operation, for a caller that names the
// operation and its path itself.
func (e *Error) Cause() string {
	msg := e.Msg
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Status != 0 && e.Err == nil {
		msg = fmt.Sprintf("server answered %d: %s", e.Status, msg)
	}
	if e.Attempts > 1 {
		msg += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Cause is err without the operation a client method put in front of it
// (see Error.Cause); any other error is returned whole.
func Cause(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Cause()
	}
	return err.Error()
}

// ErrNotFound is wrapped by errors for the contract's uniform 404, which a
// wrong token, an API that is off and an unknown API version all get.
var ErrNotFound = errors.New("the server answered 404 (the uniform 404 that hides the API): " +
	"the token may be wrong, the server may have no token file (API off), " +
	"or it may not serve this API version")

// PinError is the server certificate not matching the pinned fingerprint.
type PinError struct{ Got, Want string }

func (e *PinError) Error() string {
	return fmt.Sprintf("the server certificate's SHA-256 fingerprint is %s, but the pin (hoster-config-certSha256) is %s", e.Got, e.Want)
}

// UntrustedError is a server certificate that does not verify, with no pin
// set: nothing was sent to that server.
type UntrustedError struct {
	Host        string // the server's host name or IP
	Fingerprint string // the SHA-256 of the certificate it presented; "" if none
	Err         error  // why it does not verify
}

func (e *UntrustedError) Error() string {
	msg := fmt.Sprintf("refusing to send the token to %s: its certificate does not verify (%v), and no pin is set", e.Host, e.Err)
	if e.Fingerprint != "" {
		msg += fmt.Sprintf(". It presented a certificate with SHA-256 %s; if that is the fingerprint `hoster-server init` printed on the server (running init again there prints it again), pin it: hoster-config-certSha256 in hoster.json, HOSTER_CONFIG_CERTSHA256 or --cert-sha256", e.Fingerprint)
	} else {
		msg += ". Pin the fingerprint `hoster-server init` printed on the server: hoster-config-certSha256 in hoster.json, HOSTER_CONFIG_CERTSHA256 or --cert-sha256"
	}
	return msg + "; or trust the CA that issued it (SSL_CERT_FILE); --insecure-skip-verify turns verification off"
}

func (e *UntrustedError) Unwrap() error { return e.Err }

// transportError classifies a request that got no answer.
func transportError(op string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e // the client's own: a local file that could not be read
	}
	var cut *cutOffError
	if errors.As(err, &cut) {
		return &Error{Op: op, Msg: cut.why, Transient: true}
	}
	var pe *PinError
	if errors.As(err, &pe) {
		return &Error{Op: op, Err: pe}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &Error{Op: op, Err: err}
	}
	var uerr *url.Error
	host := "the server"
	if errors.As(err, &uerr) {
		if u, perr := url.Parse(uerr.URL); perr == nil && u.Host != "" {
			host = u.Host
		}
		err = uerr.Err // the URL is ours; the cause is what matters
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		ue := &UntrustedError{Host: host, Err: certErr.Err}
		if len(certErr.UnverifiedCertificates) > 0 {
			ue.Fingerprint = Fingerprint(certErr.UnverifiedCertificates[0].Raw)
		}
		return &Error{Op: op, Err: ue}
	}
	return &Error{Op: op, Msg: err.Error(), Transient: true}
}

// statusError turns a non-200 answer into an error; 200 is nil.
func statusError(op string, status int, header http.Header, body []byte) error {
	if status == http.StatusOK {
		return nil
	}
	if status == http.StatusNotFound {
		return &Error{Op: op, Err: ErrNotFound}
	}
	msg, reason := serverMessage(body)
	return &Error{Op: op, Status: status, Msg: msg, Reason: reason, Transient: transientStatus(status)}
}

// transientStatus reports whether an answer's status is worth trying
// again: a server error, or a 429 (slow down).
func transientStatus(status int) bool {
	return status >= 500 || status == http.StatusTooManyRequests
}

// serverMessage reads {error, cause} from a body, or a short excerpt of
// it and no cause.
func serverMessage(body []byte) (msg, cause string) {
	var e api.ErrorBody
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error, e.Cause
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "(no message)", ""
	}
	return s, ""
}
