package node_test

// This file enforces the design brief's one rule: protocol packages are
// deterministic state machines. It parses the non-test Go files of every
// protocol package and reports imports, calls and statements that would make
// a handler's behaviour depend on anything but its state and its inputs.
//
// The check is syntactic (go/parser + go/ast, no type checking), so it is
// fast, needs no build, and works while packages are mid-edit. It checks
// direct imports only; a forbidden package reached through an allowed one is
// out of its reach, as is ranging over a channel obtained from elsewhere.

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// protocolDirs are the module-relative directories holding protocol code.
// Each is checked together with its subdirectories.
var protocolDirs = []string{"data", "parity", "witness", "backup", "reconfig", "recovery", "msg", "erasure", "workload",
	"baselines/paxos", "baselines/shardedpaxos", "baselines/rspaxos"}

// requiredDirs must exist and hold Go code; the others are skipped until they do.
var requiredDirs = []string{"data", "parity", "witness", "backup", "msg", "erasure",
	"baselines/paxos", "baselines/shardedpaxos", "baselines/rspaxos"}

// forbiddenImports maps an import path to the reason it is banned. A key
// ending in "/..." also bans every path below it.
var forbiddenImports = map[string]string{
	"google.golang.org/grpc/...":              "network I/O belongs to the runtime",
	"github.com/cockroachdb/pebble/...":       "storage belongs to the runtime",
	"github.com/amalgam-store/amalgam/mc/...": "protocol code must not depend on the checker",
	"os/...":       "file and process I/O",
	"net/...":      "network I/O",
	"math/rand":    "global random source; draw randomness from the host",
	"math/rand/v2": "global random source; draw randomness from the host",
	"crypto/rand":  "non-deterministic randomness",
	"sync/...":     "locks and atomics imply concurrency",
	"io/ioutil":    "file I/O",
	"syscall":      "system calls",
	"unsafe":       "unsafe memory access",
}

// forbiddenTimeFuncs are the identifiers of package time that read the clock
// or create timers.
var forbiddenTimeFuncs = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true,
}

// violation is one offending construct.
type violation struct {
	Pos    token.Position
	Reason string
}

func (v violation) String() string {
	return fmt.Sprintf("%s:%d: %s", v.Pos.Filename, v.Pos.Line, v.Reason)
}

// importBanReason says why path may not be imported, or "" if it may.
func importBanReason(path string) string {
	for pattern, why := range forbiddenImports {
		if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
			if path == prefix || strings.HasPrefix(path, prefix+"/") {
				return why
			}
		} else if path == pattern {
			return why
		}
	}
	return ""
}

// checkFile reports the determinism violations in one parsed file.
func checkFile(fset *token.FileSet, f *ast.File) []violation {
	var out []violation
	report := func(n ast.Node, format string, args ...any) {
		out = append(out, violation{fset.Position(n.Pos()), fmt.Sprintf(format, args...)})
	}

	// Names under which package time is visible in this file.
	timeNames := map[string]bool{}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			report(imp, "unparsable import %s", imp.Path.Value)
			continue
		}
		if why := importBanReason(path); why != "" {
			report(imp, "imports %q: %s", path, why)
		}
		if path != "time" {
			continue
		}
		switch {
		case imp.Name == nil:
			timeNames["time"] = true
		case imp.Name.Name == ".":
			report(imp, `dot-imports "time": clock calls could not be checked`)
		case imp.Name.Name != "_":
			timeNames[imp.Name.Name] = true
		}
	}

	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n, "go statement starts a goroutine")
		case *ast.SelectStmt:
			report(n, "select statement")
		case *ast.ChanType:
			report(n, "channel type")
		case *ast.SendStmt:
			report(n, "channel send")
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				report(n, "channel receive")
			}
		case *ast.SelectorExpr:
			// Catches calls and function values alike (f := time.Now).
			if x, ok := n.X.(*ast.Ident); ok && timeNames[x.Name] && forbiddenTimeFuncs[n.Sel.Name] {
				report(n, "uses time.%s: clocks and timers belong to the host (use Context.SetTimer)", n.Sel.Name)
			}
		}
		return true
	})
	return out
}

// checkDir checks every file goFiles parses in dir and reports the
// violations with paths relative to root. It also returns the number of
// files parsed. Parse errors are reported as violations.
func checkDir(root, dir string) ([]violation, int, error) {
	var out []violation
	files, err := goFiles(root, dir, func(fset *token.FileSet, rel string, f *ast.File, err error) {
		if err != nil {
			out = append(out, violation{token.Position{Filename: rel, Line: 1}, "does not parse: " + err.Error()})
			return
		}
		out = append(out, checkFile(fset, f)...)
	})
	return out, files, err
}

// goFiles parses every non-test .go file in dir and its subdirectories
// (skipping testdata, vendor and names starting with "." or "_") and
// calls visit with its path relative to root, or with its parse error. It
// returns the number of files read.
func goFiles(root, dir string, visit func(fset *token.FileSet, rel string, f *ast.File, err error)) (int, error) {
	files := 0
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != dir && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			rel = path
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		f, err := parser.ParseFile(fset, rel, src, parser.ParseComments|parser.SkipObjectResolution)
		visit(fset, rel, f, err)
		return nil
	})
	return files, err
}

// TestNoLiteralTags fails on a hash type tag written as a number: every
// h.Uint64(N) or h.Tag(N) in non-test code of the module (node/tags.go
// declares them all).
func TestNoLiteralTags(t *testing.T) {
	root := moduleRoot(t)
	_, err := goFiles(root, root, func(fset *token.FileSet, rel string, f *ast.File, err error) {
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return
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
				t.Errorf("%s:%d: literal hash tag %s: declare it in node/tags.go", rel, fset.Position(c.Pos()).Line, lit.Value)
			}
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// moduleRoot walks up from the working directory to the directory holding go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod found above the working directory")
		}
		dir = parent
	}
}

func TestProtocolDeterminism(t *testing.T) {
	root := moduleRoot(t)

	var all []violation
	for _, rel := range protocolDirs {
		dir := filepath.Join(root, filepath.FromSlash(rel))
		if _, err := os.Stat(dir); err != nil {
			if slices.Contains(requiredDirs, rel) {
				t.Errorf("protocol package %s/ does not exist", rel)
			} else {
				t.Logf("skipping %s/: does not exist yet", rel)
			}
			continue
		}
		vs, files, err := checkDir(root, dir)
		if err != nil {
			t.Fatalf("walking %s: %v", rel, err)
		}
		if files == 0 {
			if slices.Contains(requiredDirs, rel) {
				t.Errorf("protocol package %s/ has no Go files", rel)
			} else {
				t.Logf("skipping %s/: no Go files yet", rel)
			}
			continue
		}
		t.Logf("checked %s/: %d files", rel, files)
		all = append(all, vs...)
	}

	slices.SortFunc(all, func(a, b violation) int {
		if c := strings.Compare(a.Pos.Filename, b.Pos.Filename); c != 0 {
			return c
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	if len(all) > 0 {
		var b strings.Builder
		for _, v := range all {
			fmt.Fprintf(&b, "\n\t%s", v)
		}
		t.Errorf("protocol packages must be deterministic state machines (docs: design brief, \"The one rule\"); %d violations:%s", len(all), b.String())
	}
}

// TestDeterminismCheckerCatchesViolations runs the checker over small bad
// sources, so a checker that silently stopped finding things would fail here.
func TestDeterminismCheckerCatchesViolations(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // substrings of expected reasons, one violation each
	}{
		{"goroutine", "package p\nfunc f() {\n\tgo f()\n}\n", []string{"go statement"}},
		{"os import", "package p\nimport \"os\"\nvar _ = os.Args\n", []string{`imports "os"`}},
		{"os/exec import", "package p\nimport \"os/exec\"\nvar _ = exec.Command\n", []string{`imports "os/exec"`}},
		{"net/http import", "package p\nimport \"net/http\"\nvar _ = http.Get\n", []string{`imports "net/http"`}},
		{"grpc import", "package p\nimport \"google.golang.org/grpc/codes\"\nvar _ = codes.OK\n", []string{"google.golang.org/grpc/codes"}},
		{"mc import", "package p\nimport \"github.com/amalgam-store/amalgam/mc\"\nvar _ = mc.X\n", []string{"amalgam/mc"}},
		{"sync import", "package p\nimport \"sync\"\nvar mu sync.Mutex\n", []string{`imports "sync"`}},
		{"time.Now", "package p\nimport \"time\"\nfunc f() int64 {\n\treturn time.Now().Unix()\n}\n", []string{"time.Now"}},
		{"time.Now value", "package p\nimport \"time\"\nvar now = time.Now\n", []string{"time.Now"}},
		{"renamed time.Sleep", "package p\nimport tm \"time\"\nfunc f() {\n\ttm.Sleep(1)\n}\n", []string{"time.Sleep"}},
		{"dot time", "package p\nimport . \"time\"\nvar d Duration\n", []string{"dot-imports"}},
		{"channel", "package p\nvar c chan int\n", []string{"channel type"}},
		{"send and receive", "package p\nfunc f(c chan<- int, d <-chan int) {\n\tc <- <-d\n}\n",
			[]string{"channel type", "channel type", "channel send", "channel receive"}},
		{"select", "package p\nfunc f() {\n\tselect {}\n}\n", []string{"select statement"}},
		{"parse error", "package p\nfunc {\n", []string{"does not parse"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "bad.go"), []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			got, files, err := checkDir(dir, dir)
			if err != nil {
				t.Fatal(err)
			}
			if files != 1 {
				t.Fatalf("parsed %d files, want 1", files)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d violations %v, want %d matching %q", len(got), got, len(tc.want), tc.want)
			}
			for i, v := range got {
				if !strings.Contains(v.Reason, tc.want[i]) {
					t.Errorf("violation %d = %q, want it to mention %q", i, v.Reason, tc.want[i])
				}
				if v.Pos.Filename != "bad.go" || v.Pos.Line < 1 {
					t.Errorf("violation %d at %s:%d, want bad.go:<line>", i, v.Pos.Filename, v.Pos.Line)
				}
			}
		})
	}

	t.Run("allowed", func(t *testing.T) {
		dir := t.TempDir()
		src := `package p

import (
	"bytes"
	"crypto/subtle"
	"encoding/binary"
	"slices"
	"sort"
	"time"
)

type state struct{ timeout time.Duration }

func f(a, b []byte, keys []string) (int, uint64, bool, time.Duration) {
	sort.Strings(keys)
	s := state{timeout: 3 * time.Second}
	return bytes.Compare(a, b) + subtle.ConstantTimeCompare(a, b), binary.LittleEndian.Uint64(a), slices.Equal(a, b), s.timeout
}
`
		if err := os.WriteFile(filepath.Join(dir, "ok.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		// Test files and testdata are not protocol code.
		if err := os.WriteFile(filepath.Join(dir, "ok_test.go"), []byte("package p\nimport \"os\"\nvar _ = os.Args\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "testdata"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "testdata", "x.go"), []byte("package x\nvar c chan int\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		got, files, err := checkDir(dir, dir)
		if err != nil {
			t.Fatal(err)
		}
		if files != 1 || len(got) != 0 {
			t.Fatalf("parsed %d files with violations %v, want 1 file and none", files, got)
		}
	})

	t.Run("subdirectory", func(t *testing.T) {
		dir := t.TempDir()
		sub := filepath.Join(dir, "inner")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "bad.go"), []byte("package inner\nimport \"math/rand\"\nvar _ = rand.Int\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		got, _, err := checkDir(dir, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Pos.Filename != filepath.Join("inner", "bad.go") || got[0].Pos.Line != 2 {
			t.Fatalf("got %v, want one violation at inner/bad.go:2", got)
		}
	})
}
