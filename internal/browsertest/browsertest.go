// Package browsertest runs page tests in a headless Chromium through
// chromedp. Without a Chromium a test skips, except under CI=true, where
// it fails (CI installs the Debian package chromium).
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browsers are the executables tried, in order.
var browsers = []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"}

// Start returns a context of a new headless browser tab, closed when the
// test ends.
func Start(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, b := range browsers {
		if p, err := exec.LookPath(b); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Chromium (tried %s): CI must install the Debian package chromium", strings.Join(browsers, ", "))
		}
		t.Skipf("no Chromium (tried %s): install the Debian package chromium to run this browser test", strings.Join(browsers, ", "))
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1600, 1000), chromedp.Flag("disable-gpu", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	start := time.Now()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	t.Logf("browser %s started in %v", path, time.Since(start).Round(time.Millisecond))
	return ctx
}

// Screenshots is the directory screenshots go to: $AMALGAM_SCREENSHOTS,
// or a temporary directory; the test log names it.
func Screenshots(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("AMALGAM_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// Shot saves a full-page screenshot as dir/name.png.
func Shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}
