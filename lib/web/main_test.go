package web_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// browser is the one headless Chromium every browser test opens its tabs
// in (nil when there is none: those tests skip, or fail under CI).
var (
	browser      context.Context
	browserError string
)

// chromium finds Debian's chromium (.ci/run installs it), or $ART_CHROMIUM.
func chromium() string {
	if p := os.Getenv("ART_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func TestMain(m *testing.M) {
	code := func() int {
		path := chromium()
		if path == "" {
			browserError = "no chromium on PATH (apt-get install chromium, or set ART_CHROMIUM)"
			return m.Run()
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
			chromedp.WindowSize(1200, 900))
		actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
		defer cancel()
		bctx, bcancel := chromedp.NewContext(actx)
		defer bcancel()
		if err := chromedp.Do(bctx); err != nil {
			browserError = fmt.Sprintf("start %s: %v", path, err)
			return m.Run()
		}
		browser = bctx
		defer cleanupFixture()
		return m.Run()
	}()
	os.Exit(code)
}

// needBrowser skips without a browser, except under CI (CI=1), where the
// browser tests are required.
func needBrowser(t *testing.T) {
	t.Helper()
	if browser != nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("browser tests are required under CI: %s", browserError)
	}
	t.Skipf("browser tests skipped: %s", browserError)
}
