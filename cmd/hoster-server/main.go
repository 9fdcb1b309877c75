// Command hoster-server runs the games and the token-protected Sync and tools
// APIs on a host machine, behind Caddy or alone on loopback.
package main

import (
	"os"

	"github.com/hoster-dev/hoster/internal/servercmd"
)

func main() { os.Exit(servercmd.Main(os.Args[1:], os.Stdout, os.Stderr)) }
