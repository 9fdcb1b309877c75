// Package scaffold writes a new game folder, as `hoster new` does: a game
// that plays at once under hoster dev and passes its own test under hoster
// test. The files are real files in files/, embedded; only the domain and
// game names and the difference between TypeScript and JavaScript are put
// in (text/template: {{.Domain}}, {{.Game}}, and {{ts ": Type"}} for a type
// annotation, which JavaScript leaves out). A file named *.ts becomes *.js
// for a JavaScript game.
//
// The folder appears whole or not at all: it is written beside its place
// under a hidden temporary name and renamed into place, and an existing
// folder is never touched.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/hoster-dev/hoster/pkg/game"
	"github.com/hoster-dev/hoster/pkg/gen"
)

// files are the templates, laid out as the game folder ("all:" keeps
// _tests, which embed would otherwise leave out).
//
//go:embed all:files
var files embed.FS

// ErrName is returned for a DOMAIN/GAME that the sites tree's rules would
// not take as a game.
var ErrName = errors.New("not a DOMAIN/GAME name")

// ErrExists is returned when something is already where the game would go.
var ErrExists = errors.New("already exists")

// Options say which game to write where.
type Options struct {
	// Root is the sites tree the game goes into, as Root/Domain/Game.
	Root string
	// Domain and Game name the game; ParseName checks them.
	Domain, Game string
	// JS writes the hooks and the test in JavaScript instead of TypeScript
	// (and no tsconfig.json: hoster gen writes one for editors).
	JS bool
}

// ParseName splits "DOMAIN/GAME" and checks both names with the rules of a
// sites tree (pkg/game), and that they are valid UTF-8, as a sync's walk
// does (pkg/mirror).
func ParseName(s string) (domain, name string, err error) {
	domain, name, ok := strings.Cut(s, "/")
	switch {
	case !ok || strings.Contains(name, "/"):
		return "", "", fmt.Errorf("%q: %w: give the domain and the game, as example.com/tag", s, ErrName)
	case !game.IsDomainName(domain):
		return "", "", fmt.Errorf("%q: %w: %q is not a domain (a domain contains a dot and does not start with _ or .)", s, ErrName, domain)
	case !game.IsGameName(name):
		return "", "", fmt.Errorf("%q: %w: %q is not a game name (it may not be empty or start with _ or .)", s, ErrName, name)
	}
	// As the sync's walk (pkg/mirror) refuses a name the server would.
	if !utf8.ValidString(s) {
		return "", "", fmt.Errorf("%q: %w: not valid UTF-8, which the server refuses", s, ErrName)
	}
	return domain, name, nil
}

// Write writes the game folder o.Root/o.Domain/o.Game and returns the files
// written, as slash paths under o.Root, sorted. When the folder (or
// anything) is already there it returns an error wrapping ErrExists and
// writes nothing; on any other failure nothing is left behind either.
func Write(o Options) ([]string, error) {
	if _, _, err := ParseName(o.Domain + "/" + o.Game); err != nil {
		return nil, err
	}
	rel := o.Domain + "/" + o.Game
	domainDir := filepath.Join(o.Root, o.Domain)
	target := filepath.Join(domainDir, o.Game)
	if _, err := os.Lstat(target); err == nil {
		return nil, fmt.Errorf("writing %s: %w; choose another name, or remove it first", target, ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("writing %s: %w", target, err)
	}
	rendered, err := render(o)
	if err != nil {
		return nil, err
	}
	_, err = os.Lstat(domainDir)
	madeDomain := errors.Is(err, fs.ErrNotExist)
	if err := os.MkdirAll(domainDir, 0o755); err != nil {
		return nil, fmt.Errorf("writing %s: %w", target, err)
	}
	tmp, err := os.MkdirTemp(domainDir, "."+o.Game+".new-")
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", target, err)
	}
	err = writeAll(tmp, rendered)
	if err == nil {
		err = os.Chmod(tmp, 0o755) // MkdirTemp's is 0700
	}
	if err == nil {
		// Checked again just before the rename, which would replace an
		// empty folder made in the meantime.
		if _, err = os.Lstat(target); err == nil {
			err = fmt.Errorf("%w; choose another name, or remove it first", ErrExists)
		} else if errors.Is(err, fs.ErrNotExist) {
			err = os.Rename(tmp, target)
		}
	}
	if err != nil {
		os.RemoveAll(tmp)
		if madeDomain {
			os.Remove(domainDir) // only if still empty
		}
		return nil, fmt.Errorf("writing %s: %w", target, err)
	}
	var written []string
	for name := range rendered {
		written = append(written, rel+"/"+name)
	}
	slices.Sort(written)
	return written, nil
}

// render fills in every template for o, by the file's path in the game.
func render(o Options) (map[string][]byte, error) {
	data := struct{ Domain, Game string }{o.Domain, o.Game}
	funcs := template.FuncMap{"ts": func(s string) string {
		if o.JS {
			return ""
		}
		return s
	}}
	out := map[string][]byte{}
	err := fs.WalkDir(files, "files", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		tmpl, err := template.New(p).Funcs(funcs).Option("missingkey=error").Parse(string(src))
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := tmpl.Execute(&b, data); err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "files/")
		if o.JS && path.Ext(name) == ".ts" {
			name = strings.TrimSuffix(name, ".ts") + ".js"
		}
		out[name] = b.Bytes()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rendering the game's templates: %w", err)
	}
	if !o.JS {
		out[gen.TSConfigFile] = gen.TSConfig()
	}
	return out, nil
}

// writeAll writes each file under dir.
func writeAll(dir string, rendered map[string][]byte) error {
	for name, body := range rendered {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			return err
		}
	}
	return nil
}
