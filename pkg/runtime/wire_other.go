//go:build !unix

package runtime

import "net"

// rawOf is nil off Unix: the writer goroutine writes everything.
func rawOf(net.Conn) rawWriter { return nil }
