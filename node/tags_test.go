package node

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tagConsts parses tags.go and returns every Tag constant with its value.
func tagConsts(t *testing.T) map[string]uint64 {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "tags.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]uint64{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Tag" {
				continue
			}
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.INT {
					t.Fatalf("%s: want an integer literal, so the value is plain to read", name.Name)
				}
				v, err := strconv.ParseUint(lit.Value, 0, 64)
				if err != nil {
					t.Fatal(err)
				}
				consts[name.Name] = v
			}
		}
	}
	return consts
}

func TestTagsRegistered(t *testing.T) {
	consts := tagConsts(t)
	if len(consts) != len(tagNames) {
		t.Errorf("%d Tag constants, %d names", len(consts), len(tagNames))
	}
	byValue := map[uint64]string{}
	for name, v := range consts {
		if other, ok := byValue[v]; ok {
			t.Errorf("%s and %s are both %d", name, other, v)
		}
		byValue[v] = name
		if s, ok := tagNames[Tag(v)]; !ok || Tag(v).String() != s {
			t.Errorf("%s (%d) has no name", name, v)
		}
	}
	if got := Tag(12345).String(); got != "tag 12345" {
		t.Errorf("unregistered tag prints %q", got)
	}
}

// TestNoLiteralTags fails on a hash type tag written as a number: every
// h.Uint64(N) or h.Tag(N) in non-test code of the module.
func TestNoLiteralTags(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal("module root not found:", err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) != 1 {
				return true
			}
			sel, ok := c.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Uint64" && sel.Sel.Name != "Tag") {
				return true
			}
			if lit, ok := c.Args[0].(*ast.BasicLit); ok && lit.Kind == token.INT {
				rel, _ := filepath.Rel(root, fset.Position(c.Pos()).Filename)
				t.Errorf("%s:%d: literal hash tag %s: declare it in node/tags.go", rel, fset.Position(c.Pos()).Line, lit.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
