package integration

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of the programs may be, from its
// func line to its closing brace: a function longer than a page does more
// than one thing, and is split where it reads better.
const maxFuncLines = 80

// longFuncExceptions are the functions allowed over maxFuncLines, each named
// <package>.<function> or <package>.<type>.<method>, with why. An entry
// that is no longer over, or no longer there, fails the test: take it out.
var longFuncExceptions = map[string]string{}

// TestNoLongFunctions fails when a non-test function in cmd/, internal/ or
// pkg/ is over maxFuncLines lines.
func TestNoLongFunctions(t *testing.T) {
	root := repoRoot(t)
	seen := map[string]bool{}
	for _, dir := range []string{"cmd", "internal", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				if name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			for _, f := range longFuncs(t, path) {
				if _, ok := longFuncExceptions[f.name]; ok {
					seen[f.name] = true
					continue
				}
				t.Errorf("%s:%d: %s is %d lines, over %d: split it where it reads better", filepath.ToSlash(rel), f.line, f.name, f.lines, maxFuncLines)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walking %s: %v", dir, err)
		}
	}
	for name, why := range longFuncExceptions {
		if !seen[name] {
			t.Errorf("%s is listed as allowed over %d lines (%s) but is not over, or is gone: take it out of longFuncExceptions", name, maxFuncLines, why)
		}
	}
}

// longFunc is a function over maxFuncLines.
type longFunc struct {
	name        string // <package>.<function> or <package>.<type>.<method>
	line, lines int
}

// longFuncs are the functions of the Go file at path over maxFuncLines.
func longFuncs(t *testing.T, path string) []longFunc {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	var out []longFunc
	for _, decl := range file.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start, end := fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line
		if n := end - start + 1; n > maxFuncLines {
			out = append(out, longFunc{name: funcName(file.Name.Name, fd), line: start, lines: n})
		}
	}
	return out
}

// funcName names fd as longFuncExceptions does.
func funcName(pkg string, fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return pkg + "." + fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr: // a generic type's method
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return pkg + "." + id.Name + "." + fd.Name.Name
	}
	return pkg + "." + fd.Name.Name
}
