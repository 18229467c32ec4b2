package explore

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/internal/browsertest"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestExplorerBrowser drives the page in headless Chromium: a trace of
// 200 steps with 50 messages in flight at every step (the times of each
// action are logged; the bound is browsertest.Bound), then bad trace
// files, which the page reports on one line.
func TestExplorerBrowser(t *testing.T) {
	ctx := browsertest.Start(t)
	dir := browsertest.Screenshots(t)
	sc := toy(50, 1000)
	sv := New(sc, lookupOf(sc))
	if err := sv.Load(mc.NewTraceFile(sc, &mc.Result{Trace: pingPath(sc, 200)})); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sv.Handler())
	defer ts.Close()
	p := &browsertest.Page{T: t, Ctx: ctx, Dir: dir}

	t.Run("responsive", func(t *testing.T) {
		p.T = t
		p.Open(ts.URL)
		if got := p.Text("#netcount"); got != "(51)" {
			t.Fatalf("in flight at step 0: %s, want (51)", got)
		}
		p.Do("end of the 200-step trace (End)", chromedp.KeyEvent(kb.End))
		if got := p.Text("#depth"); got != "200" {
			t.Fatalf("depth after End: %s", got)
		}
		if n := p.Eval(`document.querySelectorAll("#events button").length`); n < 100 {
			t.Fatalf("%v events enabled at step 200, want the 50 spams' deliveries, duplicates and drops", n)
		}
		if n := p.Eval(`document.querySelectorAll("#msc g.msg").length`); n != 200 {
			t.Fatalf("chart has %v arrows, want 200", n)
		}
		p.Shot("responsive-step-200")
		for i := range 3 {
			p.Do("back (←) "+itoa(i+1), chromedp.KeyEvent(kb.ArrowLeft))
		}
		p.Do("forward (→)", chromedp.KeyEvent(kb.ArrowRight))
		p.Do("take a drop", chromedp.Click(chromedp.CSS(`#events button[data-kind="drop"]`)))
		p.Do("initial state (Home)", chromedp.KeyEvent(kb.Home))
		p.Do("step 1 in the history tree", chromedp.Click(chromedp.CSS(`#tree li[data-step="1"] > span`)))
		if got := p.Text("#depth"); got != "1" {
			t.Fatalf("depth after clicking step 1: %s", got)
		}
	})

	t.Run("bad traces", func(t *testing.T) {
		p.T = t
		tmp := t.TempDir()
		for _, c := range []struct{ name, body, want string }{
			{"corrupted", `{"version": 1, "scenario": "toy", "ev`, "corrupted JSON"},
			{"foreign", `{"version": 1, "scenario": "paxos-3", "events": []}`, `unknown scenario "paxos-3"`},
		} {
			path := filepath.Join(tmp, c.name+".json")
			if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			p.Do("load "+c.name, chromedp.SetUploadFiles(chromedp.CSS("#load"), []string{path}))
			msg := p.Text("#error")
			hidden := p.Eval(`document.getElementById("error").hidden ? 1 : 0`)
			if hidden != 0 || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("%s trace: page error %q (hidden %v), want one line with %q", c.name, msg, hidden, c.want)
			}
			p.Shot("bad-trace-" + c.name)
		}
		p.Do("a good action clears the error", chromedp.KeyEvent(kb.Home))
		if p.Eval(`document.getElementById("error").hidden ? 1 : 0`) != 1 {
			t.Errorf("the error stays after a good action: %q", p.Text("#error"))
		}
	})
}
