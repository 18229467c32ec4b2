// Package rules holds the import rules between the module's rooms as a
// test: it fails naming the file and the import that breaks one.
package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/amalgam-store/amalgam"

// protocol lists every package of the protocol rooms with the module
// packages it may import: deterministic state machines that see only the
// node API, the messages, the layout and code, and each other as the
// design says.
var protocol = map[string][]string{
	"node":                   {},
	"erasure":                {},
	"msg":                    {"erasure", "node"},
	"backup":                 {"erasure", "msg", "node"},
	"recovery":               {"erasure", "msg", "node"},
	"data":                   {"erasure", "msg", "node", "recovery"},
	"parity":                 {"backup", "erasure", "msg", "node", "recovery"},
	"witness":                {"backup", "erasure", "msg", "node"},
	"reconfig":               {"erasure", "msg", "node"},
	"workload":               {"erasure", "msg", "node"},
	"baselines/paxos":        {"erasure", "msg", "node"},
	"baselines/shardedpaxos": {"baselines/paxos", "erasure", "msg", "node"},
	"baselines/rspaxos":      {"baselines/paxos", "erasure", "msg", "node"},
	"node/nodetest":          {"node"},
	"erasure/erasuretest":    {"erasure"},
}

// notProtocol are packages inside the protocol rooms' folders that are not
// protocol code, with why.
var notProtocol = map[string]string{
	"baselines/wirecodec": "the baselines' wire codecs, registered by the production runtime",
}

type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
	Deps       []string
}

// rel is the module-relative path of an Amalgam package, or "" for any other.
func rel(path string) string {
	if path == module {
		return "."
	}
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r
	}
	return ""
}

var (
	loadOnce sync.Once
	loaded   map[string]*pkg
	loadErr  error
)

// loadPackages lists the module's packages once per test binary.
func loadPackages(t *testing.T) map[string]*pkg {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = listPackages() })
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loaded
}

func listPackages() (map[string]*pkg, error) {
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := new(pkg)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		if r := rel(p.ImportPath); r != "" {
			pkgs[r] = p
		}
	}
	return pkgs, nil
}

// where names the non-test file of p that imports imp.
func where(t *testing.T, p *pkg, imp string) string {
	t.Helper()
	for _, name := range append(slices.Clone(p.GoFiles), p.CgoFiles...) {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range f.Imports {
			if v, _ := strconv.Unquote(s.Path.Value); v == imp {
				return rel(p.ImportPath) + "/" + name
			}
		}
	}
	return rel(p.ImportPath)
}

// forbidden reports every import of p that is, or leads to, a module
// package ok rejects: the file, the import, and the package reached.
func forbidden(t *testing.T, pkgs map[string]*pkg, p *pkg, ok func(string) bool, direct bool) {
	t.Helper()
	for _, imp := range p.Imports {
		r := rel(imp)
		if r == "" {
			continue
		}
		if !ok(r) {
			t.Errorf("%s imports %s", where(t, p, imp), r)
			continue
		}
		if direct {
			continue
		}
		for _, d := range pkgs[r].Deps {
			if rd := rel(d); rd != "" && !ok(rd) {
				t.Errorf("%s imports %s, which brings in %s", where(t, p, imp), r, rd)
				break
			}
		}
	}
}

func sorted(pkgs map[string]*pkg) []string {
	names := make([]string, 0, len(pkgs))
	for r := range pkgs {
		names = append(names, r)
	}
	sort.Strings(names)
	return names
}

func inRoom(r, room string) bool { return r == room || strings.HasPrefix(r, room+"/") }

func TestProtocolRooms(t *testing.T) {
	pkgs := loadPackages(t)
	for _, r := range sorted(pkgs) {
		allowed, isProto := protocol[r]
		if !isProto {
			for room := range protocol {
				if _, ok := notProtocol[r]; !ok && inRoom(r, room) && room != "node" {
					t.Errorf("%s is in the protocol room %s but not in the rules: add it to protocol or notProtocol", r, room)
				}
			}
			continue
		}
		forbidden(t, pkgs, pkgs[r], func(imp string) bool { return slices.Contains(allowed, imp) }, true)
	}
	for r := range protocol {
		if pkgs[r] == nil {
			t.Errorf("rules name %s, which is gone: drop it", r)
		}
	}
}

// The checker engine imports no Amalgam room but node, even indirectly.
func TestEngineStandsAlone(t *testing.T) {
	pkgs := loadPackages(t)
	for _, r := range sorted(pkgs) {
		if inRoom(r, "mc") {
			forbidden(t, pkgs, pkgs[r], func(imp string) bool { return imp == "node" || inRoom(imp, "mc") }, false)
		}
	}
}

// The examples are written against the public API: node and mc.
func TestExamplesUsePublicAPI(t *testing.T) {
	pkgs := loadPackages(t)
	for _, r := range sorted(pkgs) {
		if inRoom(r, "examples") {
			forbidden(t, pkgs, pkgs[r], func(imp string) bool {
				return imp == "node" || inRoom(imp, "mc") || inRoom(imp, "examples")
			}, false)
		}
	}
}

// Nothing outside bench/ imports the benchmark, even indirectly.
func TestNothingImportsBench(t *testing.T) {
	pkgs := loadPackages(t)
	for _, r := range sorted(pkgs) {
		if !inRoom(r, "bench") {
			forbidden(t, pkgs, pkgs[r], func(imp string) bool { return !inRoom(imp, "bench") }, false)
		}
	}
}

// testSupport are the packages that only tests import.
var testSupport = []string{"e2e/e2etest", "erasure/erasuretest", "internal/browsertest", "internal/clitest", "mc/mctest"}

// No package's non-test code imports a test-support package, even
// indirectly.
func TestOnlyTestsImportTestSupport(t *testing.T) {
	pkgs := loadPackages(t)
	for _, r := range sorted(pkgs) {
		forbidden(t, pkgs, pkgs[r], func(imp string) bool { return !slices.Contains(testSupport, imp) }, false)
	}
	for _, r := range testSupport {
		if pkgs[r] == nil {
			t.Errorf("rules name %s, which is gone: drop it", r)
		}
	}
}
