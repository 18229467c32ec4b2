package browsertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Page drives a page that counts the answers it rendered in
// document.body.dataset.actions (the explorer does).
type Page struct {
	T   *testing.T
	Ctx context.Context
	Dir string // screenshots
}

// Bound is the most an action may take: generous, for loaded machines.
const Bound = 5 * time.Second

// Open navigates to url and waits for its first rendered answer.
func (p *Page) Open(url string) time.Duration {
	p.T.Helper()
	return p.act("open "+url, func(ctx context.Context) error { return chromedp.Do(ctx, chromedp.Navigate(url)) })
}

// Do runs the actions (a click, a key) and waits for the page to render
// the answer; it fails the test past Bound and returns the time taken.
func (p *Page) Do(name string, steps ...chromedp.Action[chromedp.Void]) time.Duration {
	p.T.Helper()
	return p.act(name, func(ctx context.Context) error { return chromedp.Do(ctx, steps...) })
}

func (p *Page) act(name string, run func(context.Context) error) time.Duration {
	p.T.Helper()
	before := p.actions()
	start := time.Now()
	ctx, cancel := context.WithTimeout(p.Ctx, 30*time.Second)
	defer cancel()
	if err := run(ctx); err != nil {
		p.T.Fatalf("%s: %v", name, err)
	}
	expr := fmt.Sprintf(`(+document.body.dataset.actions || 0) > %d`, before)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(5*time.Millisecond))); err != nil {
		p.T.Fatalf("%s: the page rendered no answer: %v", name, err)
	}
	d := time.Since(start)
	ms := p.Eval(`window.lastActionMs || 0`)
	p.T.Logf("%s: %v (in the page: %.0f ms)", name, d.Round(time.Millisecond), ms)
	if d > Bound {
		p.T.Errorf("%s took %v, more than %v", name, d, Bound)
	}
	return d
}

func (p *Page) actions() int {
	v, err := chromedp.Run(p.Ctx, chromedp.Evaluate[int](`+document.body.dataset.actions || 0`))
	if err != nil {
		return 0 // no page yet
	}
	return v
}

// Eval evaluates a JavaScript expression to a number.
func (p *Page) Eval(expr string) float64 {
	p.T.Helper()
	v, err := chromedp.Run(p.Ctx, chromedp.Evaluate[float64](expr))
	if err != nil {
		p.T.Fatalf("%s: %v", expr, err)
	}
	return v
}

// Text is the text of the first element sel matches ("" if none).
func (p *Page) Text(sel string) string {
	p.T.Helper()
	v, err := chromedp.Run(p.Ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel)))
	if err != nil {
		p.T.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

// Shot saves a screenshot named name.
func (p *Page) Shot(name string) { p.T.Helper(); Shot(p.T, p.Ctx, p.Dir, name) }
