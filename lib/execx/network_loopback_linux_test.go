//go:build linux

package execx

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/shim"
	"github.com/art-runtime/art/lib/exitcode"
)

// loopbackSuite is a real Go test suite of the kind most projects have:
// its tests start httptest servers on 127.0.0.1 and ::1 and talk to them,
// and one test tries the listener the outside test left on the host's
// loopback (-host), which must not be reachable from a task of its own
// network namespace.
const loopbackSuite = `package suite

import (
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

var host = flag.String("host", "", "a listener on the host's loopback")

func get(t *testing.T, url string) string {
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestHTTPTestServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
	defer srv.Close()
	if got := get(t, srv.URL); got != "hello" {
		t.Fatalf("got %q", got)
	}
}

func TestIPv6Loopback(t *testing.T) {
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "six") })}}
	srv.Start()
	defer srv.Close()
	if got := get(t, srv.URL); got != "six" {
		t.Fatalf("got %q", got)
	}
}

func TestTLSServer(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tls") }))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestHostLoopbackUnreachable(t *testing.T) {
	c, err := net.DialTimeout("tcp", *host, 2*time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("reached the host's listener %s", *host)
	}
	t.Logf("host listener %s: %v", *host, err)
}
`

// buildLoopbackSuite compiles loopbackSuite into dir/suite.test, readable
// and executable by anyone.
func buildLoopbackSuite(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH: cannot build the test suite")
	}
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "go.mod"), "module suite\n\ngo 1.22\n")
	writeFile(t, filepath.Join(src, "suite_test.go"), loopbackSuite)
	out := filepath.Join(dir, "suite.test")
	cmd := exec.Command(goBin, "test", "-c", "-o", out, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, b)
	}
	if err := os.Chmod(out, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNetworkLoopbackGoSuite runs a Go test suite that starts httptest
// servers under landlock and strict with network loopback, as root and as
// an unprivileged user, next to bwrap --unshare-net (its --unshare-all)
// and, as the control that shows the check can fail, isolation none with
// the host's network. The suite must pass in every confined row, and the
// listener on the host's loopback must see no connection from any of them
// (counted outside, by the listener itself).
func TestNetworkLoopbackGoSuite(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	e := newAttackEnv(t)
	suite := buildLoopbackSuite(t, publicTempDir(t, "execx-suite-"))
	type row struct {
		mode    string
		network NetworkMode
		reaches bool // the host's listener is reachable (the control)
		fails   bool // the suite cannot pass (no loopback at all)
	}
	rows := []row{
		{"none", NetworkHost, true, false},
		{"landlock", "", false, true}, // landlock's default, network none: what a user met before
		{"landlock", NetworkLoopback, false, false},
		{"strict", NetworkLoopback, false, false},
		{"strict", "", false, false}, // strict's default
		{"bwrap", "", false, false},
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Log("bwrap not on PATH (Debian: bubblewrap): no comparison")
		rows = rows[:len(rows)-1]
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-10s %-9s %-7s %-6s %s\n", "user", "mode", "network", "suite", "host loopback reached")
	for _, u := range attackUsers() {
		for _, r := range rows {
			name := fmt.Sprintf("%s/%s/%s", u.name, r.mode, r.network)
			t.Run(name, func(t *testing.T) {
				ws := filepath.Join(publicTempDir(t, "execx-netsuite-"), "ws")
				if err := os.Mkdir(ws, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Chown(ws, u.uid(), u.gid()); err != nil {
					t.Fatal(err)
				}
				hostPort, hostAccepted := tcpListener(t)
				cfg := attackRunner{Mode: r.mode, WS: ws, Bin: e.bin, Program: "sh", Network: r.network,
					Args: []string{"-c", fmt.Sprintf("%s -test.v -test.count=1 -host=127.0.0.1:%d 2>&1; echo SUITE-EXIT=$?", suite, hostPort)}}
				rep, _ := runAttackRunner(t, e, u, cfg, "unused")
				reached := hostAccepted() > 0
				passed := strings.Contains(rep.Output, "SUITE-EXIT=0")
				fmt.Fprintf(&table, "%-10s %-9s %-7s %-6v %v\n", u.name, r.mode, r.network, passed, reached)
				switch {
				case r.reaches && !reached:
					t.Errorf("control: the host's listener saw no connection; the check cannot fail:\n%s", rep.Output)
				case !r.reaches && reached:
					t.Errorf("the task reached the host's loopback listener:\n%s", rep.Output)
				case r.fails && passed:
					t.Errorf("the suite passed without a loopback:\n%s", rep.Output)
				case !r.reaches && !r.fails && !passed:
					t.Errorf("the suite failed:\n%s\nenforced %v", rep.Output, rep.Enforced)
				}
				if r.network == NetworkLoopback && !containsStr(rep.Enforced, "network.loopback") {
					t.Errorf("enforced %v lacks network.loopback", rep.Enforced)
				}
			})
		}
	}
	t.Logf("\n%s", table.String())
}

func containsStr(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// A kernel that refuses network namespaces: landlock with network
// loopback is refused (125) unless best effort is allowed, and then runs
// with the narrowest network it can still have, Landlock's TCP rule,
// saying what it dropped.
func TestLoopbackWithoutNamespaces(t *testing.T) {
	needLandlock(t)
	refuseNamespaces(t)
	p := policyFor(t, IsolationLandlock, "true")
	p.Network.Mode = NetworkLoopback
	wantRefusal(t, p, NewTask("true"), exitcode.Internal, ErrIsolationUnavailable, "network loopback")
	p.IsolationBestEffort = true
	res := mustRun(t, p, NewTask("true"), Options{})
	if res.Status != StatusSucceeded || res.Network.Mode != NetworkNone || containsStr(res.Isolation.Enforced, "network.loopback") ||
		(landlockABI() >= 4 && !containsStr(res.Isolation.Enforced, "landlock.net.tcp")) ||
		len(res.Isolation.Dropped) != 1 || !strings.HasPrefix(res.Isolation.Dropped[0], "network.loopback: ") {
		t.Errorf("best-effort landlock loopback without namespaces: %s network %+v %+v", res.Status, res.Network, res.Isolation)
	}
}

// TestNetworkNarrowing: a narrowing may only make the network narrower
// (host > allow > loopback > none), a stronger isolation keeps the
// policy's network, and destinations come only from the policy's list.
func TestNetworkNarrowing(t *testing.T) {
	base := &Policy{Allow: []string{"true"}, Workspace: t.TempDir(), Isolation: IsolationLandlock,
		Network: NetworkPolicy{Mode: NetworkAllow, Allow: []string{"*.example.com", "golang.org:8443"}}}
	base.Default()
	for _, tc := range []struct {
		name     string
		n        Narrowing
		wantMode NetworkMode
		wantErr  string
	}{
		{"narrower", Narrowing{Network: NetworkLoopback}, NetworkLoopback, ""},
		{"narrowest", Narrowing{Network: NetworkNone}, NetworkNone, ""},
		{"wider", Narrowing{Network: NetworkHost}, "", "would widen the policy's network allow"},
		{"listed host", Narrowing{AllowHosts: []string{"a.example.com"}}, NetworkAllow, ""},
		{"unlisted host", Narrowing{AllowHosts: []string{"example.com"}}, "", "not in the policy's network allowlist"},
		{"other port", Narrowing{AllowHosts: []string{"golang.org"}}, "", "not in the policy's network allowlist"},
		{"hosts without allow", Narrowing{Network: NetworkLoopback, AllowHosts: []string{"a.example.com"}}, "", "need network allow"},
		{"stronger isolation", Narrowing{Isolation: IsolationStrict}, NetworkAllow, ""},
	} {
		q, err := base.Narrow(tc.n)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: %v; want an error mentioning %q", tc.name, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case q.NetworkMode() != tc.wantMode:
			t.Errorf("%s: mode %s; want %s", tc.name, q.NetworkMode(), tc.wantMode)
		}
	}
	// A landlock policy's default (none) stays none under strict, whose
	// own default would be loopback.
	ll := &Policy{Allow: []string{"true"}, Workspace: t.TempDir(), Isolation: IsolationLandlock}
	ll.Default()
	q, err := ll.Narrow(Narrowing{Isolation: IsolationStrict})
	if err != nil || q.NetworkMode() != NetworkNone {
		t.Errorf("landlock policy under --isolation strict: %v, %v; want network none", q.NetworkMode(), err)
	}
	if _, err := ll.Narrow(Narrowing{Network: NetworkLoopback}); err == nil || exitcode.Of(err) != exitcode.Refused {
		t.Errorf("loopback on a none policy: %v; want a refusal (126)", err)
	}
}

// publicTempDir is a temporary directory every user may enter (t.TempDir
// lies beneath a directory only the test's user can): where an
// unprivileged runner's workspace and programs go. It is removed at the
// end of the test.
func publicTempDir(t *testing.T, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLoopbackNeverPooled: a task with a network namespace of its own
// never runs on a pooled supervisor (which sits in the runner's network
// namespace): with a Pool, under isolation none with network loopback, the
// host's loopback listener still sees nothing from the task.
func TestLoopbackNeverPooled(t *testing.T) {
	needNamespaces(t)
	port, accepted := tcpListener(t)
	pool := NewPool(1)
	defer pool.Close()
	p := policyFor(t, IsolationNone, attackName)
	p.Path = []string{filepath.Dir(selfLink(t))}
	p.Network.Mode = NetworkLoopback
	warmPool(p, Options{Pool: pool})
	b := fmt.Sprintf(`[{"name":"host-listener","kind":"tcp","addr":"127.0.0.1:%d"}]`, port)
	res := mustRun(t, p, NewTask(attackName, "net", b), Options{Pool: pool})
	if v := parseAttacks(res.Output)["host-listener"]; v == "ok" || v == "" || accepted() != 0 {
		t.Fatalf("pooled none+loopback task reached the host's listener (%q, %d accepted)\n%s", v, accepted(), res.Output)
	}
	if !containsStr(res.Isolation.Enforced, "network.loopback") {
		t.Errorf("enforced %v", res.Isolation.Enforced)
	}
}

// refuseNamespaces makes every namespaced start fail as a kernel without
// them would (EPERM), until the end of the test.
func refuseNamespaces(t *testing.T) {
	startNamespaced = func(path string, _ []string, _ *os.ProcAttr) (int, <-chan exitInfo, error) {
		return 0, nil, shim.StartError(path, unix.EPERM)
	}
	t.Cleanup(func() { startNamespaced = startProcess })
}
