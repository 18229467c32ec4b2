//go:build mutants

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/internal/browsertest"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// mutantTrace saves the counterexample mc run finds for mutant commit-f-1
// on scenario normal-lossy; the mutant stays on until the test ends.
func mutantTrace(t *testing.T) (string, *mc.TraceFile) {
	t.Helper()
	data.Mutant = "commit-f-1"
	t.Cleanup(func() { data.Mutant = "" })
	path := filepath.Join(t.TempDir(), "trace.json")
	if _, _, err := runMC(t, "mc", "run", "normal-lossy", "--quiet", "--save-trace", path); exitCode(err) != exitViolation {
		t.Fatalf("run: %v", err)
	}
	tf, err := mc.LoadTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, tf
}

// TestMCExploreBrowser drives mc explore in headless Chromium on a
// mutant's counterexample: step to the violation and read its
// explanation, go back three steps and branch, search from there and land
// on the violation found, save that path and replay it with mc replay.
// Run with: go test -tags mutants -run TestMCExplore ./cmd/amalgam-cli
func TestMCExploreBrowser(t *testing.T) {
	path, tf := mutantTrace(t)
	sv, err := explorerFor(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sv.Handler())
	defer ts.Close()
	ctx := browsertest.Start(t)
	p := &browsertest.Page{T: t, Ctx: ctx, Dir: browsertest.Screenshots(t)}
	p.Open(ts.URL)

	for i := range tf.Events {
		p.Do(fmt.Sprintf("forward to step %d (→)", i+1), chromedp.KeyEvent(kb.ArrowRight))
	}
	if d := p.Text("#depth"); d != fmt.Sprint(len(tf.Events)) {
		t.Fatalf("at step %s, want the trace's end %d", d, len(tf.Events))
	}
	if v := p.Text("#preds li.violated"); !strings.Contains(v, tf.Predicate) || !strings.Contains(v, tf.Explanation) {
		t.Fatalf("violated predicate shown: %q, want %q: %q", v, tf.Predicate, tf.Explanation)
	}
	p.Shot("1-violation")

	for i := range 3 {
		p.Do(fmt.Sprintf("back %d (←)", i+1), chromedp.KeyEvent(kb.ArrowLeft))
	}
	at := int(p.Eval(`V.step`))
	if n := p.Eval(`document.querySelectorAll("#events button.ev:not(.taken)").length`); n == 0 {
		t.Fatalf("no other event enabled three steps before the violation")
	}
	p.Do("take an event the trace did not", chromedp.Click(chromedp.CSS(`#events button.ev:not(.taken)`)))
	if n := p.Eval(fmt.Sprintf(`document.querySelectorAll('#tree li[data-step="%d"] > ul').length`, at)); n != 2 {
		t.Fatalf("history tree: step #%d has %v branches, want 2", at, n)
	}
	p.Shot("2-branch")

	from := int(p.Eval(`V.depth`))
	p.Do("bounded search for a violation", chromedp.Click(chromedp.CSS("#search")))
	notice, v := p.Text("#notice"), p.Text("#preds li.violated")
	depth := int(p.Eval(`V.depth`))
	if !strings.Contains(notice, "violation") || v == "" || depth <= from {
		t.Fatalf("search from step %d: %q, now at step %d, violated %q", from, notice, depth, v)
	}
	t.Logf("search: %s", notice)
	p.Shot("3-search")

	dl := t.TempDir()
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dl}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#save"))); err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(dl, "normal-lossy-trace.json")
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(saved); err == nil && json.Valid(b) {
			break
		}
		if time.Since(start) > safetyStop {
			t.Fatalf("no download %s after %v", saved, safetyStop)
		}
	}
	out, _, err := runMC(t, "--output", "json", "mc", "replay", saved)
	var rp mcSummary
	if err != nil || json.Unmarshal([]byte(out), &rp) != nil || rp.Violation == nil ||
		!strings.Contains(v, rp.Violation.Predicate) || rp.Violation.TraceLength != depth {
		t.Fatalf("replay of the saved path: %v\n%s", err, out)
	}
}

// TestMCExploreOnViolation: mc run --explore-on-violation serves the
// explorer on the counterexample until interrupted, then exits as a
// violation does.
func TestMCExploreOnViolation(t *testing.T) {
	data.Mutant = "commit-f-1"
	defer func() { data.Mutant = "" }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String() // free again once closed
	ln.Close()
	cmd := newRootCmd()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"mc", "run", "normal", "--quiet", "--explore-on-violation=" + addr})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	var resp *http.Response
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if resp, err = http.Get("http://" + addr + "/api/state"); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("mc run ended before serving: %v", err)
		default:
		}
		if time.Since(start) > safetyStop {
			t.Fatalf("no explorer at %s after %v: %v", addr, safetyStop, err)
		}
	}
	var v struct {
		Notice  string
		Forward int
		End     int
	}
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil || v.Forward < 0 || !strings.Contains(v.Notice, "violating") {
		t.Fatalf("explorer state: %v %+v", err, v)
	}
	cancel()
	if err := <-done; exitCode(err) != exitViolation {
		t.Fatalf("mc run ended with %v (status %d), want status %d", err, exitCode(err), exitViolation)
	}
}
