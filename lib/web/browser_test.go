package web_test

import (
	"bytes"
	"context"
	"image"
	_ "image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/art-runtime/art/lib/web"
)

// tab is one browser tab that records what a hostile page could do: every
// request it sends, every console call, exception and dialog.
type tab struct {
	ctx  context.Context
	base string

	mu         sync.Mutex
	requests   []string
	console    []string
	exceptions []string
	dialogs    []string
}

func newTab(t *testing.T, base string) *tab {
	t.Helper()
	needBrowser(t)
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	tb := &tab{ctx: ctx, base: base}
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Listen(ctx, func(ev any) {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			tb.requests = append(tb.requests, e.Request.URL)
		case *runtime.EventConsoleAPICalled:
			var b strings.Builder
			for _, a := range e.Args {
				b.Write(a.Value)
				b.WriteByte(' ')
			}
			tb.console = append(tb.console, string(e.Type)+": "+b.String())
		case *runtime.EventExceptionThrown:
			tb.exceptions = append(tb.exceptions, e.ExceptionDetails.Text)
		case *page.EventJavascriptDialogOpening:
			tb.dialogs = append(tb.dialogs, e.Message)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// do runs actions with a bound, failing the test on error.
func (tb *tab) do(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", tb.location(t), err)
	}
}

func (tb *tab) location(t *testing.T) string {
	loc, _ := chromedp.Run(tb.ctx, chromedp.Location())
	return loc
}

// text is the text of the first element matching css.
func (tb *tab) text(t *testing.T, css string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		t.Fatalf("%s: text of %s: %v", tb.location(t), css, err)
	}
	return s
}

func (tb *tab) eval(t *testing.T, js string) any {
	t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[any](js))
	if err != nil {
		t.Fatalf("eval %s: %v", js, err)
	}
	return v
}

// open navigates to path and waits for the page's heading.
func (tb *tab) open(t *testing.T, path string) {
	t.Helper()
	tb.do(t, chromedp.Navigate(tb.base+path), chromedp.WaitVisible(chromedp.CSS("h1")))
}

// click follows the link matching css and waits for the next page.
func (tb *tab) click(t *testing.T, css string) {
	t.Helper()
	before := tb.location(t)
	tb.do(t, chromedp.Click(chromedp.CSS(css)))
	deadline := time.Now().Add(20 * time.Second)
	for tb.location(t) == before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	tb.do(t, chromedp.WaitVisible(chromedp.CSS("h1")))
}

// contains fails unless the element's text holds every want.
func (tb *tab) contains(t *testing.T, css string, want ...string) {
	t.Helper()
	got := tb.text(t, css)
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %s does not show %q; it shows:\n%s", tb.location(t), css, w, got)
		}
	}
}

// screenshot saves the page under dir and checks it rendered: a PNG of
// many colours, not one blank sheet.
func (tb *tab) screenshot(t *testing.T, dir, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		// FullScreenshot(90) is a JPEG: decode that instead.
		img, err = decodeAny(buf)
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
	}
	colours := map[[3]uint32]bool{}
	r := img.Bounds()
	nonWhite := 0
	for y := r.Min.Y; y < r.Max.Y; y += 2 {
		for x := r.Min.X; x < r.Max.X; x += 2 {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			colours[[3]uint32{cr >> 12, cg >> 12, cb >> 12}] = true
			if cr < 0xf000 || cg < 0xf000 || cb < 0xf000 {
				nonWhite++
			}
		}
	}
	if len(colours) < 4 || nonWhite < r.Dx()*r.Dy()/400 {
		t.Errorf("screenshot %s looks blank: %d colours, %d non-white samples of %dx%d", name, len(colours), nonWhite, r.Dx(), r.Dy())
	}
}

// harmless fails if the page did anything a payload would: a changed
// title, a dialog, a javascript: link, a request anywhere but the server,
// a console call or exception, a request to the canary.
func (tb *tab) harmless(t *testing.T, f *fixture) {
	t.Helper()
	title := tb.eval(t, "document.title").(string)
	if strings.Contains(title, "pwned") || !strings.HasSuffix(title, "· artobs") {
		t.Errorf("%s: document.title is %q", tb.location(t), title)
	}
	if js := tb.eval(t, `Array.from(document.querySelectorAll('a,[href],[src]')).filter(e => /^\s*javascript:/i.test(e.getAttribute('href')||e.getAttribute('src')||'')).length`); js != float64(0) {
		t.Errorf("%s: %v javascript: links", tb.location(t), js)
	}
	if n := tb.eval(t, `document.querySelectorAll('main script, main img, main iframe, main style, main svg:not(#chart), [onload], [onerror], [onmouseover]').length`); n != float64(0) {
		t.Errorf("%s: %v elements from attacker text became markup", tb.location(t), n)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, u := range tb.requests {
		if !strings.HasPrefix(u, tb.base+"/") {
			t.Errorf("the page requested %s", u)
		}
	}
	if len(tb.console) > 0 || len(tb.exceptions) > 0 || len(tb.dialogs) > 0 {
		t.Errorf("console %q, exceptions %q, dialogs %q", tb.console, tb.exceptions, tb.dialogs)
	}
	if n := f.canaryHits.Load(); n > 0 {
		t.Errorf("the canary server got %d requests", n)
	}
}

// TestBrowserPages walks the site as a user does, following links from
// the queue list to an agent task's transcript, and from the goals to a
// goal, checking what each page shows and that it renders.
func TestBrowserPages(t *testing.T) {
	needBrowser(t)
	f := getFixture(t)
	shots := t.TempDir()
	tb := newTab(t, f.serve(t, web.Config{}))

	tb.open(t, "/")
	tb.contains(t, "#queues", "default", "agents")
	tb.screenshot(t, shots, "queues")

	tb.click(t, `#queues a[href="/queues/default"]`)
	tb.contains(t, "#summary", "2") // 2 tasks: hello and evil (at least)
	tb.contains(t, "#rates", "failed: 1", "failure rate 50.0%")
	if n := tb.eval(t, `document.querySelectorAll('#chart polyline').length`); n != float64(5) {
		t.Errorf("chart: %v polylines, want one per state", n)
	}
	tb.screenshot(t, shots, "queue")

	tb.click(t, `a[href="/queues/default/tasks?state=failed"]`)
	tb.contains(t, "#tasks", "evil", "exited with status 3")
	if strings.Contains(tb.text(t, "#tasks"), "hello") {
		t.Error("the failed filter lists hello, which succeeded")
	}
	tb.click(t, `#tasks a[href="/queues/default/tasks/evil"]`)
	tb.contains(t, "#attempts", "failed", "exited with status 3")
	tb.contains(t, "#tail", "<script>document.title='pwned'")
	tb.contains(t, "#manifest", `"program": "sh"`)
	tb.screenshot(t, shots, "task")

	// Search by id: an exact id opens its task.
	tb.do(t, chromedp.Navigate(tb.base+"/queues/agents/tasks"), chromedp.WaitVisible(chromedp.CSS("input[name=q]")),
		chromedp.SendKeys(chromedp.CSS("input[name=q]"), "fix-app"), chromedp.Submit(chromedp.CSS("input[name=q]")))
	deadline := time.Now().Add(20 * time.Second)
	for !strings.HasSuffix(tb.location(t), "/queues/agents/tasks/fix-app") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	tb.do(t, chromedp.WaitVisible(chromedp.CSS("#transcript")))
	tb.contains(t, "#status", "succeeded")
	tb.contains(t, "#transcript", "read_file", "replace_text", "verify", "finish", "rejected", "debt", "fixed app.txt", "status finished")
	tb.contains(t, "tr.refusal", "finish")
	tb.contains(t, "tr.verify", "verify")
	tb.contains(t, "#sinkevents", "task.finished", "agent.")
	tb.screenshot(t, shots, "agent-task")

	tb.open(t, "/goals")
	tb.contains(t, "#goals", "g1", "Ship <script>")
	tb.click(t, `#goals a[href="/goals/g1"]`)
	tb.contains(t, "#phases", "frame", "framed <script>")
	tb.contains(t, "#checklist", "task fix-app=succeeded", "checked in the queue")
	tb.contains(t, "#revisions", "goal.")
	tb.screenshot(t, shots, "goal")

	tb.open(t, "/events")
	tb.contains(t, "#eventrows", "queue/default/task/evil", "web/attack")
	tb.screenshot(t, shots, "events")
	tb.click(t, `#eventrows a[href="/queues/default/tasks/hello"]`)
	tb.contains(t, "h1", "Task hello")
	tb.harmless(t, f)
}

// TestBrowserAttacks opens every page that shows attacker text (task argv
// and output, the agent's task and replies, the goal, an event) and checks
// that nothing ran: no title change, no dialog, no request but to the
// server, nothing on the console.
func TestBrowserAttacks(t *testing.T) {
	needBrowser(t)
	f := getFixture(t)
	base := f.serve(t, web.Config{})
	for _, path := range []string{
		"/queues/default/tasks/evil", "/queues/agents/tasks/fix-app", "/goals", "/goals/g1",
		"/events", "/events?subject=web/attack", "/queues/default/tasks?q=" + "%3Cscript%3E",
		"/queues/%3Cscript%3E", "/goals/%3Csvg%20onload%3D1%3E",
	} {
		t.Run(strings.ReplaceAll(path, "/", "_"), func(t *testing.T) {
			tb := newTab(t, base)
			tb.do(t, chromedp.Navigate(base+path))
			time.Sleep(200 * time.Millisecond) // let any late script or request happen
			tb.harmless(t, f)
		})
	}
	// The attacker text is on the pages, as text.
	tb := newTab(t, base)
	tb.open(t, "/queues/agents/tasks/fix-app")
	tb.contains(t, "#transcript", `<svg onload="document.title='pwned'">`, "javascript:document.title")
	tb.harmless(t, f)
}

// TestBrowserLiveTail keeps the events page open while a worker finishes a
// new task: its events appear in the table through server-sent events.
func TestBrowserLiveTail(t *testing.T) {
	needBrowser(t)
	f := getFixture(t)
	tb := newTab(t, f.serve(t, web.Config{}))
	tb.open(t, "/events?subject=queue/default/task/live-1")
	tb.do(t, chromedp.Poll[chromedp.Void](`document.getElementById('livestate').textContent === 'on'`, chromedp.WithPollingTimeout(20*time.Second)))
	if strings.Contains(tb.text(t, "#eventlist"), "live-1") {
		t.Fatal("live-1 is on the page before it was enqueued")
	}
	if _, err := f.run("artq", "enqueue", "--id", "live-1", "--", "echo", "live"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.run("artq", "work", "--drain", "--allow", "echo", "--workspace", f.ws, "--events", "jsonl:"+f.sink); err != nil {
		t.Fatal(err)
	}
	tb.do(t, chromedp.Poll[chromedp.Void](`document.getElementById('eventrows').textContent.includes('task.finished')`, chromedp.WithPollingTimeout(20*time.Second)))
	tb.contains(t, "#eventrows", "queue/default/task/live-1", "task.started", "task.finished")
	tb.screenshot(t, t.TempDir(), "live")
	tb.harmless(t, f)
}

// TestBrowserToken: with a token, a page without it is refused (401); the
// address with ?token= once sets the cookie and drops the token from the
// address, and the pages then load.
func TestBrowserToken(t *testing.T) {
	needBrowser(t)
	f := getFixture(t)
	const token = "correct-horse-battery-staple"
	base := f.serve(t, web.Config{Token: token})
	tb := newTab(t, base)
	tb.do(t, chromedp.Navigate(base+"/queues"))
	if body := tb.text(t, "body"); !strings.Contains(body, "token required") {
		t.Fatalf("without the token the page shows %q", body)
	}
	tb.do(t, chromedp.Navigate(base+"/queues?token=wrong-token-wrong-token"))
	if body := tb.text(t, "body"); !strings.Contains(body, "token required") {
		t.Fatalf("with a wrong token the page shows %q", body)
	}
	tb.open(t, "/queues?token="+token)
	if loc := tb.location(t); loc != base+"/queues" {
		t.Errorf("after ?token the address is %s, want the token dropped", loc)
	}
	tb.contains(t, "#queues", "default")
	tb.open(t, "/goals")
	tb.contains(t, "#goals", "g1")
}

// decodeAny decodes a PNG or JPEG screenshot.
func decodeAny(b []byte) (image.Image, error) {
	img, _, err := image.Decode(bytes.NewReader(b))
	return img, err
}
