package web_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/queue/nats/natstest"
	"github.com/art-runtime/art/lib/web"
)

// serveEmpty serves an empty state home; it returns the base URL.
func serveEmpty(t *testing.T, cfg web.Config) string {
	t.Helper()
	cfg.Home = t.TempDir()
	return serve(t, cfg)
}

// noRedirect is a client that reports redirects instead of following.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, method, u, host string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestGuards: the read-only, Host and token guards as an attacker meets
// them, over a real listener; every answer carries the security headers.
func TestGuards(t *testing.T) {
	base := serveEmpty(t, web.Config{})
	port := base[strings.LastIndex(base, ":")+1:]
	const token = "0123456789abcdef-token"
	// A server that listens on loopback but is configured as if exposed:
	// the token is then required.
	tokBase := serveEmpty(t, web.Config{Listen: "0.0.0.0:0", Token: token, AllowHost: []string{"ci.example.com"}})
	tokPort := tokBase[strings.LastIndex(tokBase, ":")+1:]
	cases := []struct {
		name, method, base, path, host string
		hdr                            map[string]string
		want                           int
	}{
		{"get", "GET", base, "/queues", "", nil, 200},
		{"head", "HEAD", base, "/queues", "", nil, 200},
		{"post", "POST", base, "/queues", "", nil, 405},
		{"put", "PUT", base, "/api/queues", "", nil, 405},
		{"delete", "DELETE", base, "/api/goals/x", "", nil, 405},
		{"patch", "PATCH", base, "/", "", nil, 405},
		{"options", "OPTIONS", base, "/", "", nil, 405},
		{"rebinding host", "GET", base, "/api/queues", "evil.example:" + port, nil, 421},
		{"rebinding host without port", "GET", base, "/api/queues", "evil.example", nil, 421},
		{"another port", "GET", base, "/api/queues", "127.0.0.1:1", nil, 421},
		{"localhost", "GET", base, "/api/queues", "localhost:" + port, nil, 200},
		{"ipv6 loopback literal", "GET", base, "/api/queues", "[::1]:" + port, nil, 200},
		{"no token", "GET", tokBase, "/api/queues", "", nil, 401},
		{"wrong bearer", "GET", tokBase, "/api/queues", "", map[string]string{"Authorization": "Bearer " + token + "x"}, 401},
		{"bearer", "GET", tokBase, "/api/queues", "", map[string]string{"Authorization": "Bearer " + token}, 200},
		{"cookie", "GET", tokBase, "/api/queues", "", map[string]string{"Cookie": web.CookieName + "=" + token}, 200},
		{"wrong cookie", "GET", tokBase, "/api/queues", "", map[string]string{"Cookie": web.CookieName + "=nope"}, 401},
		{"query token", "GET", tokBase, "/queues?token=" + token + "&state=x", "", nil, 303},
		{"wrong query token", "GET", tokBase, "/queues?token=nope", "", nil, 401},
		{"query token, path of another host", "GET", tokBase, "//evil.example/queues?token=" + token + "&state=x", "", nil, 303},
		{"allowed host name", "GET", tokBase, "/api/queues", "ci.example.com:" + tokPort, map[string]string{"Authorization": "Bearer " + token}, 200},
		{"other host name with token", "GET", tokBase, "/api/queues", "evil.example:" + tokPort, map[string]string{"Authorization": "Bearer " + token}, 421},
		{"post with token", "POST", tokBase, "/api/queues", "", map[string]string{"Authorization": "Bearer " + token}, 405},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := get(t, c.method, c.base+c.path, c.host, c.hdr)
			if resp.StatusCode != c.want {
				t.Fatalf("%s %s (Host %q): %d, want %d: %s", c.method, c.path, c.host, resp.StatusCode, c.want, body)
			}
			h := resp.Header
			if h.Get("Content-Security-Policy") != web.CSP || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
				t.Errorf("security headers missing: %v", h)
			}
			if c.want == 405 && h.Get("Allow") != "GET, HEAD" {
				t.Errorf("405 without Allow: %v", h)
			}
			if c.want == 303 {
				loc := h.Get("Location")
				if strings.Contains(loc, "token") || (loc != "/queues?state=x" && loc != "/evil.example/queues?state=x") {
					t.Errorf("redirect to %q, want the address without the token", loc)
				}
				ck := resp.Cookies()
				if len(ck) != 1 || ck[0].Value != token || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode {
					t.Errorf("cookie %v", ck)
				}
			}
		})
	}
	for _, d := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'", "style-src 'self'"} {
		if !strings.Contains(web.CSP, d) || strings.Contains(web.CSP, "unsafe") {
			t.Errorf("CSP %q lacks %s or allows unsafe sources", web.CSP, d)
		}
	}
}

// TestAPIMatchesCLI: the API serves the documents the CLI prints, byte
// for byte, over the fixture's real queue, goal and sink.
func TestAPIMatchesCLI(t *testing.T) {
	f := getFixture(t)
	base := f.serve(t, web.Config{})
	for _, c := range []struct {
		path string
		cli  []string
	}{
		{"/api/queues/default/tasks", []string{"artq", "status", "-o", "json"}},
		{"/api/queues/default/tasks?state=failed", []string{"artq", "status", "--state", "failed", "-o", "json"}},
		{"/api/queues/default", []string{"artq", "status", "--summary", "-o", "json"}},
		{"/api/queues/default/tasks/evil", []string{"artq", "status", "evil", "-o", "json"}},
		{"/api/queues/agents/tasks/fix-app", []string{"artq", "--queue", "agents", "status", "fix-app", "-o", "json"}},
		{"/api/queues/default/log", []string{"artq", "log", "-o", "json"}},
		{"/api/queues/default/log?after=3", []string{"artq", "log", "--after", "3", "-o", "json"}},
		{"/api/goals/g1", []string{"artgoal", "show", "g1", "-o", "json"}},
		{"/api/events?n=5", []string{"artobs", "tail", f.sink, "-n", "5", "-o", "json"}},
		{"/api/events?subject=goal/g1", []string{"artobs", "tail", f.sink, "--subject", "goal/g1", "-o", "json"}},
	} {
		resp, body := get(t, "GET", base+c.path, "", nil)
		want, err := f.run(c.cli...)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || body != string(want) {
			t.Errorf("GET %s: %d\n%s\nwant (%s):\n%s", c.path, resp.StatusCode, body, strings.Join(c.cli, " "), want)
		}
	}
	resp, body := get(t, "GET", base+"/api/queues/agents/tasks/fix-app/transcript", "", nil)
	data, _ := os.ReadFile(filepath.Join(f.transcripts, "fix-app.jsonl"))
	if resp.StatusCode != 200 || body != string(data) {
		t.Errorf("transcript: %d\n%s\nwant the file:\n%s", resp.StatusCode, body, data)
	}
	for path, want := range map[string]int{
		"/api/queues/nope": 404, "/api/queues/default/tasks/nope": 404, "/api/goals/nope": 404,
		"/api/queues/default/tasks?state=bogus": 400, "/api/queues/default/tasks?page=-1": 400,
		"/api/events?sink=7": 404, "/api/queues/default/log?limit=0": 400, "/queues/nope": 404,
		"/api/queues/default/tasks/hello/transcript": 404,
	} {
		if resp, body := get(t, "GET", base+path, "", nil); resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d: %s", path, resp.StatusCode, want, body)
		}
	}
}

// TestTasksPaginate: 120 tasks page through the state index 50 at a time,
// in enqueue order, with a Link to the next page until the last.
func TestTasksPaginate(t *testing.T) {
	f := getFixture(t)
	var batch bytes.Buffer
	for i := range 120 {
		fmt.Fprintf(&batch, `{"apiVersion":"art/v1alpha1","kind":"Task","id":"p-%03d","program":"true"}`+"\n", i)
	}
	in := filepath.Join(f.dir, "batch.jsonl")
	if err := os.WriteFile(in, batch.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.run("artq", "--queue", "many", "enqueue", "--batch", "--manifest", in); err != nil {
		t.Fatal(err)
	}
	if _, err := f.run("artq", "--queue", "many", "compact"); err != nil {
		t.Fatal(err)
	}
	base := f.serve(t, web.Config{})
	next := "/api/queues/many/tasks"
	var ids []string
	pages := 0
	for next != "" {
		resp, body := get(t, "GET", base+next, "", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", next, resp.StatusCode, body)
		}
		pages++
		sc := bufio.NewScanner(strings.NewReader(body))
		for sc.Scan() {
			id := sc.Text()[strings.Index(sc.Text(), `"id":"`)+6:]
			ids = append(ids, id[:strings.IndexByte(id, '"')])
		}
		next = ""
		if l := resp.Header.Get("Link"); l != "" {
			u, err := url.Parse(strings.TrimSuffix(strings.TrimPrefix(l, "<"), `>; rel="next"`))
			if err != nil {
				t.Fatal(err)
			}
			next = u.String()
		}
	}
	if pages != 3 || len(ids) != 120 || ids[0] != "p-000" || ids[119] != "p-119" {
		t.Fatalf("%d pages, %d ids (%v ... %v)", pages, len(ids), ids[:1], ids[len(ids)-1:])
	}
	for i, id := range ids {
		if id != fmt.Sprintf("p-%03d", i) {
			t.Fatalf("id %d is %s: not in enqueue order", i, id)
		}
	}
	if _, body := get(t, "GET", base+"/queues/many/tasks?page=1", "", nil); !strings.Contains(body, "through the state index") || !strings.Contains(body, "p-050") || strings.Contains(body, "p-049<") {
		t.Errorf("page 2 of the HTML list:\n%s", body)
	}
	if _, body := get(t, "GET", base+"/api/queues/many/tasks?q=-11", "", nil); strings.Count(body, "\n") != 10 {
		t.Errorf("search -11: %q, want p-110 to p-119", body)
	}
}

// TestTranscriptConfined: a task's arguments are attacker text; a
// --transcript naming a file outside the transcript directories, or a
// symbolic link inside one pointing out, is not read.
func TestTranscriptConfined(t *testing.T) {
	f := getFixture(t)
	secret := filepath.Join(f.dir, "secret.jsonl")
	os.WriteFile(secret, []byte(`{"apiVersion":"art/v1alpha1","kind":"TranscriptRecord","type":"start","time":"2026-01-01T00:00:00Z","run":{"task":"SECRET-CONTENT"}}`+"\n"), 0o600)
	link := filepath.Join(f.transcripts, "link.jsonl")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	for id, p := range map[string]string{"peek-out": secret, "peek-link": link, "peek-dots": f.transcripts + "/../secret.jsonl"} {
		if _, err := f.run("artq", "--queue", "peek", "enqueue", "--id", id, "--", "artagent", "run", "--transcript", p); err != nil {
			t.Fatal(err)
		}
	}
	base := f.serve(t, web.Config{})
	for _, id := range []string{"peek-out", "peek-link", "peek-dots"} {
		resp, body := get(t, "GET", base+"/queues/peek/tasks/"+id, "", nil)
		if resp.StatusCode != 200 || strings.Contains(body, "SECRET-CONTENT") || !strings.Contains(body, "not read") {
			t.Errorf("task %s: %d, the page reads the file or does not say it did not:\n%s", id, resp.StatusCode, body)
		}
		if resp, body := get(t, "GET", base+"/api/queues/peek/tasks/"+id+"/transcript", "", nil); resp.StatusCode != 404 || strings.Contains(body, "SECRET") {
			t.Errorf("transcript of %s: %d %s", id, resp.StatusCode, body)
		}
	}
}

// TestNATSBackend: a queue on a real JetStream server is shown from its
// stream (no state index: by replay), with the documents artq prints.
func TestNATSBackend(t *testing.T) {
	f := getFixture(t)
	srv := natstest.Start(t, natstest.Options{})
	q := []string{"artq", "--backend", srv.URL(), "--queue", "nq"}
	for _, s := range [][]string{
		append(slices.Clone(q), "enqueue", "--id", "n1", "--", "echo", "one"),
		append(slices.Clone(q), "enqueue", "--id", "n2", "--", "sh", "-c", "exit 4"),
		append(slices.Clone(q), "work", "--drain", "--allow", "echo", "--allow", "sh", "--workspace", f.ws),
	} {
		if _, err := f.run(s...); err != nil {
			t.Fatal(err)
		}
	}
	base := serve(t, web.Config{Home: f.home, Backend: srv.URL(), Queues: []string{"nq"}})
	for path, cli := range map[string][]string{
		"/api/queues/nq/tasks":    {"status", "-o", "json"},
		"/api/queues/nq":          {"status", "--summary", "-o", "json"},
		"/api/queues/nq/tasks/n2": {"status", "n2", "-o", "json"},
		"/api/queues/nq/log":      {"log", "-o", "json"},
	} {
		want, err := f.run(append(slices.Clone(q), cli...)...)
		if err != nil {
			t.Fatal(err)
		}
		if resp, body := get(t, "GET", base+path, "", nil); resp.StatusCode != 200 || body != string(want) {
			t.Errorf("GET %s: %d\n%s\nwant:\n%s", path, resp.StatusCode, body, want)
		}
	}
	if resp, body := get(t, "GET", base+"/queues/nq/tasks/n2", "", nil); resp.StatusCode != 200 || !strings.Contains(body, "exited with status 4") {
		t.Errorf("task page: %d\n%s", resp.StatusCode, body)
	}
	if resp, body := get(t, "GET", base+"/queues/nq", "", nil); resp.StatusCode != 200 || !strings.Contains(body, "failure rate 50.0%") {
		t.Errorf("queue page: %d\n%s", resp.StatusCode, body)
	}
	if resp, _ := get(t, "GET", base+"/api/queues/default", "", nil); resp.StatusCode != 404 {
		t.Errorf("a queue not named with --queue: %d, want 404", resp.StatusCode)
	}
}

// TestStreamsBounded: at most MaxStreams live tails are open at once; the
// next is refused (503) and served again once one closes.
func TestStreamsBounded(t *testing.T) {
	f := getFixture(t)
	base := f.serve(t, web.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func() (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/events/stream?sink=0", nil)
		return http.DefaultClient.Do(req)
	}
	var held []*http.Response
	for range web.MaxStreams {
		resp, err := open()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if line, _ := bufio.NewReader(resp.Body).ReadString('\n'); !strings.HasPrefix(line, ":") {
			t.Fatalf("stream starts %q", line)
		}
		held = append(held, resp)
	}
	resp, body := get(t, "GET", base+"/events/stream?sink=0", "", nil)
	if resp.StatusCode != 503 {
		t.Fatalf("stream %d: %d %s, want 503", web.MaxStreams+1, resp.StatusCode, body)
	}
	held[0].Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := open()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream's slot was not freed: %d", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, r := range held[1:] {
		r.Body.Close()
	}
}
