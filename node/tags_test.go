package node

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
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
