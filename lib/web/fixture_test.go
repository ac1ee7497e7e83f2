package web_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/art-runtime/art/lib/web"
)

// fixture is a real state home made by the real tools: a default queue
// with a task that succeeded and one that failed printing hostile text, an
// agents queue with one artagent run (mock provider, transcript kept), a
// goal citing the agent task, and a sink the worker, artgoal and artobs
// wrote to. Attacker text (a <script>, an <img onerror>, an <svg onload>,
// a javascript: link, a CSS url()) is in task argv, output, the agent's
// task and replies, the goal and an event's attributes; each payload would
// change document.title or fetch from the canary server.
type fixture struct {
	dir, home, bin, sink, transcripts, ws string
	env                                   []string
	canary                                *httptest.Server
	canaryHits                            atomic.Int64
}

var (
	fixOnce sync.Once
	fix     *fixture
	fixErr  error
)

// payload is the hostile text, aimed at the canary server at addr.
func payload(addr string) string {
	return `<script>document.title='pwned';fetch('http://` + addr + `/script')</script>` +
		`<img src=x onerror="document.title='pwned'"><svg onload="document.title='pwned'"></svg>` +
		`<a href="javascript:document.title='pwned'">click</a>` +
		`<style>*{background:url(http://` + addr + `/css)}</style>` +
		`" onmouseover="document.title='pwned'`
}

// getFixture builds the fixture once for the package.
func getFixture(t *testing.T) *fixture {
	t.Helper()
	fixOnce.Do(func() { fix, fixErr = buildFixture() })
	if fixErr != nil {
		t.Fatal(fixErr)
	}
	return fix
}

func cleanupFixture() {
	if fix != nil {
		fix.canary.Close()
		os.RemoveAll(fix.dir)
	}
}

func buildFixture() (*fixture, error) {
	dir, err := os.MkdirTemp("", "artweb-")
	if err != nil {
		return nil, err
	}
	f := &fixture{dir: dir, home: filepath.Join(dir, "home"), bin: filepath.Join(dir, "bin"),
		sink: filepath.Join(dir, "events.jsonl"), transcripts: filepath.Join(dir, "transcripts"), ws: filepath.Join(dir, "ws")}
	f.canary = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.canaryHits.Add(1) }))
	for _, d := range []string{f.transcripts, filepath.Join(f.ws, "proj")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return f, err
		}
	}
	build := exec.Command("go", "build", "-o", f.bin+"/", "../../cmd/artq", "../../cmd/artexec-shim", "../../cmd/artagent", "../../cmd/artgoal", "../../cmd/artobs")
	if out, err := build.CombinedOutput(); err != nil {
		return f, fmt.Errorf("go build: %v\n%s", err, out)
	}
	f.env = append(os.Environ(), "ART_HOME="+f.home, "PATH="+f.bin+":"+os.Getenv("PATH"))
	p := payload(f.canary.Listener.Addr().String())
	if err := os.WriteFile(filepath.Join(f.ws, "proj", "app.txt"), []byte("broken\n"), 0o644); err != nil {
		return f, err
	}
	mock := filepath.Join(dir, "mock.jsonl")
	js := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) }
	script := `{"action":"read_file","path":"app.txt","reason":"` + js(p) + `"}
{"action":"replace_text","path":"app.txt","old":"broken","new":"fixed","reason":"edit"}
{"action":"finish","summary":"` + js(p) + `"}
{"action":"verify","reason":"check"}
{"action":"finish","summary":"fixed app.txt"}
`
	if err := os.WriteFile(mock, []byte(script), 0o644); err != nil {
		return f, err
	}
	steps := [][]string{
		{"artq", "enqueue", "--id", "hello", "--", "echo", "hello"},
		{"artq", "enqueue", "--id", "evil", "--", "sh", "-c", `printf '%s\n' "$1" >&2; exit 3`, "sh", p},
		{"artq", "work", "--drain", "--allow", "echo", "--allow", "sh", "--workspace", f.ws, "--events", "jsonl:" + f.sink},
		{"artq", "--queue", "agents", "enqueue", "--id", "fix-app", "--workspace-mode", "copy", "--workspace-source", "proj", "--",
			"artagent", "run", "--workspace", ".", "--task", "fix app " + p, "--provider", "mock", "--mock-script", mock,
			"--allow", "grep", "--verify", "grep -q fixed app.txt", "--transcript", filepath.Join(f.transcripts, "fix-app.jsonl"), "--events", "jsonl:" + f.sink},
		{"artq", "--queue", "agents", "work", "--drain", "--allow", "artagent", "--allow", "grep", "--workspace", f.ws, "--events", "jsonl:" + f.sink},
		{"artgoal", "new", "g1", "--title", "Ship " + p, "--non-goal", "no rewrite", "--check", "app fixed " + p},
		{"artgoal", "--events", "jsonl:" + f.sink, "check", "g1", "--rev", "1", "--item", "c0", "--queue", "agents", "--evidence", "task:fix-app"},
		{"artgoal", "--events", "jsonl:" + f.sink, "receipt", "g1", "--rev", "2", "--summary", "framed " + p, "--evidence", "note:" + p},
	}
	for _, s := range steps {
		if _, err := f.run(s...); err != nil {
			return f, err
		}
	}
	draft := `{"apiVersion":"art/v1alpha1","kind":"Draft","subject":"web/attack","type":"note","attrs":{"text":"` + js(p) + `"}}` + "\n"
	cmd := exec.Command(filepath.Join(f.bin, "artobs"), "emit", "--sink", "jsonl:"+f.sink)
	cmd.Env, cmd.Stdin = f.env, strings.NewReader(draft)
	if out, err := cmd.CombinedOutput(); err != nil {
		return f, fmt.Errorf("artobs emit: %v\n%s", err, out)
	}
	return f, nil
}

// run runs one of the built tools in the fixture's environment.
func (f *fixture) run(args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(f.bin, args[0]), args[1:]...)
	cmd.Env = f.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out, nil
}

// serve starts a server over the fixture on a loopback port and returns
// its base URL; cfg's Home, Sinks and Dirs are the fixture's.
func (f *fixture) serve(t *testing.T, cfg web.Config) string {
	t.Helper()
	cfg.Home, cfg.Sinks, cfg.Dirs = f.home, []string{f.sink}, []string{f.transcripts}
	return serve(t, cfg)
}

// serve starts a server for cfg on a loopback port until the test ends
// and returns its base URL. An empty cfg.Listen is the port's address.
func serve(t *testing.T, cfg web.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen == "" {
		cfg.Listen, cfg.Loopback = ln.Addr().String(), true
	}
	if cfg.Backend == "" {
		cfg.Backend = "file"
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- web.New(cfg).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}
