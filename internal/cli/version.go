package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/hoster-dev/hoster/internal/version"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/apiclient"
	"github.com/spf13/cobra"
)

func newVersionCmd(ios *IO, g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the client's version and API version, and the server's when one is configured",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runVersion(cmd.Context(), ios, g)
		},
	}
}

func runVersion(ctx context.Context, ios *IO, g *globals) error {
	out := newOutput(ios, g)
	info := map[string]any{"version": version.Version, "api": api.Version}
	cfg, err := loadConfig(g)
	if err != nil {
		return err
	}
	if !g.JSON {
		fmt.Fprintf(ios.Out, "hoster %s\napi %d\n", version.Version, api.Version)
	}
	if cfg.Server == "" {
		out.Report(info)
		return nil
	}
	client, err := newClient(cfg, out, 1)
	if err != nil {
		return err
	}
	v, err := client.Version(ctxOrBackground(ctx))
	if err != nil {
		out.Report(info)
		return failAt(ExitFailed, "connect", cfg.Server, err)
	}
	info["serverApi"] = v.API
	info["server"] = cfg.Server
	if !g.JSON {
		fmt.Fprintf(ios.Out, "server %s api %d\n", cfg.Server, v.API)
	}
	out.Report(info)
	return atServer(apiMismatch(v.API), cfg.Server)
}

// apiMismatch says which side must upgrade when the API versions differ.
func apiMismatch(server int) error {
	switch {
	case server == api.Version:
		return nil
	case server > api.Version:
		return withExit(ExitVersion, fmt.Errorf("the server speaks API %d and this hoster speaks API %d: upgrade hoster", server, api.Version))
	default:
		return withExit(ExitVersion, fmt.Errorf("the server speaks API %d and this hoster speaks API %d: upgrade hoster-server", server, api.Version))
	}
}

// atServer places a version mismatch at the server, for --json.
func atServer(err error, server string) error {
	var ee *exitError
	if errors.As(err, &ee) {
		ee.op, ee.path = "connect", server
	}
	return err
}

// dial makes the client the configuration asks for, and the check of the
// server (its API version) that must pass before the client is used to
// change anything; sync runs it beside its first requests. server is the
// server's URL.
func dial(g *globals, out *output, conns int) (client *apiclient.Client, check func(context.Context) error, server string, err error) {
	cfg, err := loadConfig(g)
	if err != nil {
		return nil, nil, "", err
	}
	if err := cfg.requireServer(true); err != nil {
		return nil, nil, "", err
	}
	client, err = newClient(cfg, out, conns)
	if err != nil {
		return nil, nil, "", err
	}
	return client, versionCheck(client, cfg.Server), cfg.Server, nil
}

// versionCheck asks server's version through client: a failure to connect
// or an API mismatch, placed at the server.
func versionCheck(client *apiclient.Client, server string) func(context.Context) error {
	return func(ctx context.Context) error {
		v, err := client.Version(ctx)
		if err != nil {
			if errors.Is(err, apiclient.ErrNotFound) {
				err = fmt.Errorf("%w; or %s is not a hoster-server", err, server)
			}
			return failAt(ExitFailed, "connect", server, err)
		}
		return atServer(apiMismatch(v.API), server)
	}
}

func newClient(cfg config, out *output, conns int) (*apiclient.Client, error) {
	build := out.ios.NewClient
	if build == nil {
		build = apiclient.NewClient
	}
	c, err := build(apiclient.ClientConfig{
		Server: cfg.Server, Token: cfg.Token, CertSHA256: cfg.CertSHA256,
		InsecureSkipVerify: cfg.InsecureSkipVerify, Warn: out.Warn, Conns: conns,
	})
	if err != nil {
		return nil, failAt(ExitUsage, "configure", cfg.Server, err)
	}
	return c, nil
}

func ctxOrBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}
