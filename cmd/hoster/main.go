// Command hoster is the client: it generates game modules, mirrors a sites
// tree to a hoster-server, and mirrors the server's logs back.
package main

import (
	"os"

	"github.com/hoster-dev/hoster/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
