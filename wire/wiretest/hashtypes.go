package wiretest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
)

// HashTypes lists the exported types of the package in dir (tests
// excluded) with a value method Hash of one parameter: its messages, and
// the values they carry. A generic type is listed by its name alone.
func HashTypes(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no sources in %s: %v", dir, err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != "Hash" || fd.Recv == nil || len(fd.Recv.List) != 1 || fd.Type.Params.NumFields() != 1 {
				continue
			}
			recv := fd.Recv.List[0].Type
			if g, ok := recv.(*ast.IndexListExpr); ok {
				recv = g.X
			}
			if id, ok := recv.(*ast.Ident); ok && id.IsExported() {
				names = append(names, id.Name)
			}
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("found no types with a Hash method in %s", dir)
	}
	return names, nil
}
