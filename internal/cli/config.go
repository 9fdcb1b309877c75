package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hoster-dev/hoster/pkg/game"
	"github.com/spf13/viper"
)

// The configuration keys, their environment variables and their flags.
const (
	keyServer  = "hoster-config-server"
	keyServers = "hoster-config-servers"
	keyToken   = "hoster-config-apiToken"
	keyPin     = "hoster-config-certSha256"
)

// config is the resolved client configuration.
type config struct {
	Server string
	// Servers are a fleet's nodes (hoster-config-servers), sorted by
	// name: pull mirrors each into a folder of its name.
	Servers    []node
	Token      string
	CertSHA256 string
	// InsecureSkipVerify is --insecure-skip-verify.
	InsecureSkipVerify bool
	File               string // the config file read, if any
}

// loadConfig resolves the configuration: flags, then environment, then the
// config file (--config, else ./hoster.json, else
// $XDG_CONFIG_HOME/hoster/hoster.json). The token's value never appears in
// an error.
func loadConfig(g *globals) (config, error) {
	v := viper.New()
	file, err := configFile(g.ConfigFile)
	if err != nil {
		return config{}, err
	}
	if file != "" {
		values, err := readConfigFile(file)
		if err != nil {
			return config{}, failAt(ExitUsage, "configure", file, err)
		}
		for key, val := range values {
			v.SetDefault(key, val) // below the environment and the flags
		}
	}
	for key, env := range map[string]string{keyServer: "HOSTER_CONFIG_SERVER", keyServers: "HOSTER_CONFIG_SERVERS",
		keyToken: "HOSTER_CONFIG_APITOKEN", keyPin: "HOSTER_CONFIG_CERTSHA256"} {
		v.BindEnv(key, env)
	}
	if g.Server != "" {
		v.Set(keyServer, g.Server)
	}
	if g.Servers != "" {
		v.Set(keyServers, g.Servers)
	}
	if g.CertSHA256 != "" {
		v.Set(keyPin, g.CertSHA256)
	}
	if g.TokenFile != "" {
		b, err := os.ReadFile(g.TokenFile)
		if err != nil {
			return config{}, failAt(ExitUsage, "configure", g.TokenFile, fmt.Errorf("reading --token-file: %w", err))
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return config{}, failAt(ExitUsage, "configure", g.TokenFile, fmt.Errorf("reading --token-file %s: it is empty", g.TokenFile))
		}
		v.Set(keyToken, tok)
	}
	servers, err := parseServers(v.GetString(keyServers))
	if err != nil {
		return config{}, failAt(ExitUsage, "configure", "", err)
	}
	server := strings.TrimSpace(v.GetString(keyServer))
	if server == "" && len(servers) > 0 {
		server = servers[0].URL // a fleet's nodes are one: any of them syncs it
	}
	return config{
		Server:             server,
		Servers:            servers,
		Token:              strings.TrimSpace(v.GetString(keyToken)),
		CertSHA256:         strings.TrimSpace(v.GetString(keyPin)),
		InsecureSkipVerify: g.InsecureSkipVerify,
		File:               file,
	}, nil
}

// readConfigFile reads a config file's values by key. Keys match exactly,
// as in every JSON file a user writes (game.DecodeExact): viper would take
// "hoster-config-apitoken" for the token. No error quotes a value.
func readConfigFile(file string) (map[string]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the config file %s: %w", file, err)
	}
	if !json.Valid(data) {
		// The details of a syntax error would quote the token.
		return nil, fmt.Errorf("reading the config file %s: it is not valid JSON", file)
	}
	var f struct {
		Server  any `json:"hoster-config-server"`
		Servers any `json:"hoster-config-servers"`
		Token   any `json:"hoster-config-apiToken"`
		Pin     any `json:"hoster-config-certSha256"`
	}
	if err := game.DecodeExact(data, &f, ""); err != nil {
		return nil, fmt.Errorf("reading the config file %s (its keys: %s, %s, %s, %s): %w", file, keyServer, keyServers, keyToken, keyPin, err)
	}
	values := map[string]string{}
	if f.Servers != nil {
		// {"<node>": "<URL>", ...}, kept in the environment's form.
		m, ok := f.Servers.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("reading the config file %s: %s must be an object of node names and URLs", file, keyServers)
		}
		var pairs []string
		for name, u := range m {
			us, ok := u.(string)
			if !ok {
				return nil, fmt.Errorf("reading the config file %s: %s: the URL of %q must be a string", file, keyServers, name)
			}
			pairs = append(pairs, name+"="+us)
		}
		values[keyServers] = strings.Join(pairs, ",")
	}
	for key, val := range map[string]any{keyServer: f.Server, keyToken: f.Token, keyPin: f.Pin} {
		switch val := val.(type) {
		case nil:
		case string:
			values[key] = val
		default:
			return nil, fmt.Errorf("reading the config file %s: %s must be a string", file, key)
		}
	}
	return values, nil
}

// node is one server of a fleet, by its name.
type node struct {
	Name string
	URL  string
}

// parseServers reads hoster-config-servers in its environment's form,
// "<name>=<URL>,...", sorted by name. A name is a folder of the mirror:
// letters, digits, '.', '-' and '_', up to 64, not "." or "..".
func parseServers(s string) ([]node, error) {
	var nodes []node
	seen := map[string]bool{}
	for _, pair := range strings.Split(s, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		name, url, ok := strings.Cut(pair, "=")
		name, url = strings.TrimSpace(name), strings.TrimSpace(url)
		switch {
		case !ok || url == "":
			return nil, fmt.Errorf("reading %s: %q is not <node>=<URL>", keyServers, pair)
		case !validNodeName(name):
			return nil, fmt.Errorf("reading %s: the node name %q must be letters, digits, '.', '-' or '_', up to 64 (it names a folder of the mirror)", keyServers, name)
		case seen[name]:
			return nil, fmt.Errorf("reading %s: the node %q is named twice", keyServers, name)
		}
		seen[name] = true
		nodes = append(nodes, node{Name: name, URL: url})
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return nodes, nil
}

func validNodeName(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// configFile finds the config file to read, or "" for none.
func configFile(explicit string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", failAt(ExitUsage, "configure", explicit, fmt.Errorf("reading --config: %w", err))
		}
		return explicit, nil
	}
	candidates := []string{"hoster.json"}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		if home, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(home, ".config")
		}
	}
	if dir != "" {
		candidates = append(candidates, filepath.Join(dir, "hoster", "hoster.json"))
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", failAt(ExitUsage, "configure", c, fmt.Errorf("reading the config file %s: %w", c, err))
		}
	}
	return "", nil
}

// requireServer checks that a server, and a token when needed, are set.
func (c config) requireServer(needToken bool) error {
	where := "hoster.json, the environment or a flag"
	if c.Server == "" {
		return failAt(ExitUsage, "configure", "", fmt.Errorf("no server configured: set %s or %s (%s), HOSTER_CONFIG_SERVER or --server", keyServer, keyServers, where))
	}
	if needToken && c.Token == "" {
		return failAt(ExitUsage, "configure", "", fmt.Errorf("no API token configured: set %s in hoster.json, HOSTER_CONFIG_APITOKEN, or --token-file F", keyToken))
	}
	return nil
}
