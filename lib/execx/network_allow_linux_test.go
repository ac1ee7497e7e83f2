//go:build linux

package execx

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// countingServer serves h on 127.0.0.1 and counts its requests, so a
// test sees from outside what reached it.
func countingServer(t *testing.T, h http.Handler) (port int, hits *atomic.Int64) {
	t.Helper()
	hits = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port, hits
}

// moduleProxy is a Go module proxy (GOPROXY protocol) serving one module,
// example.test/hello v1.0.0, whose zip is built with golang.org/x/mod/zip
// as the real proxies build theirs.
func moduleProxy(t *testing.T) http.Handler {
	t.Helper()
	src := t.TempDir()
	mod := "module example.test/hello\n\ngo 1.22\n"
	writeFile(t, filepath.Join(src, "go.mod"), mod)
	writeFile(t, filepath.Join(src, "hello.go"), "package hello\n\n// Hello greets.\nconst Hello = \"hi from the module proxy\"\n")
	var zip bytes.Buffer
	if err := modzip.CreateFromDir(&zip, module.Version{Path: "example.test/hello", Version: "v1.0.0"}, src); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"/example.test/hello/@v/list":        []byte("v1.0.0\n"),
		"/example.test/hello/@v/v1.0.0.info": []byte(`{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`),
		"/example.test/hello/@v/v1.0.0.mod":  []byte(mod),
		"/example.test/hello/@v/v1.0.0.zip":  zip.Bytes(),
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	})
}

// gitRepo is a bare repository served over git's dumb HTTP protocol
// (git update-server-info), with one commit whose README says marker.
func gitRepo(t *testing.T, marker string) http.Handler {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	dir := t.TempDir()
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	src := filepath.Join(dir, "src")
	writeFile(t, filepath.Join(src, "README"), marker+"\n")
	run(src, "init", "-q")
	run(src, "add", "README")
	run(src, "commit", "-q", "-m", "first")
	run(dir, "clone", "-q", "--bare", "src", "repo.git")
	run(filepath.Join(dir, "repo.git"), "update-server-info")
	return http.FileServer(http.Dir(dir))
}

// TestNetworkAllow: under network allow, in strict and landlock, as root
// and as an unprivileged user, a real dependency download (go mod
// download from a module proxy on a listed name) and a git clone over
// HTTP work through the proxy, and every attack from inside is refused:
// judged from outside by the targets' own counters and by the Result's
// refusals, each with its one-line reason.
func TestNetworkAllow(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	goBin, _ = filepath.EvalSymlinks(goBin)
	e := newAttackEnv(t)
	modPort, modHits := countingServer(t, moduleProxy(t))
	marker := fmt.Sprintf("cloned-through-the-proxy-%d", os.Getpid())
	gitPort, gitHits := countingServer(t, gitRepo(t, marker))
	svcPort, svcAccepted := tcpListener(t) // a service on the host's loopback
	udpPort, udpReceived := udpListener(t) // a "resolver" on the host's loopback
	mp, gp, sp := strconv.Itoa(modPort), strconv.Itoa(gitPort), strconv.Itoa(svcPort)
	attacks := []netAttack{
		{Name: "name-not-listed", Kind: "proxy", Raw: "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n"},
		{Name: "ipv4-literal", Kind: "proxy", Raw: "CONNECT 127.0.0.1:" + sp + " HTTP/1.1\r\n\r\n"},
		{Name: "ipv6-literal", Kind: "proxy", Raw: "CONNECT [::1]:" + sp + " HTTP/1.1\r\n\r\n"},
		{Name: "listed-name-other-port", Kind: "proxy", Raw: "CONNECT goproxy.test:" + sp + " HTTP/1.1\r\n\r\n"},
		{Name: "connect-host-mismatch", Kind: "proxy", Raw: "CONNECT goproxy.test:" + mp + " HTTP/1.1\r\nHost: evil.test:" + mp + "\r\n\r\n"},
		{Name: "suffix-look-alike", Kind: "proxy", Raw: "CONNECT evil-example.com:443 HTTP/1.1\r\n\r\n"},
		{Name: "rebind-loopback", Kind: "proxy", Raw: "CONNECT rebind.test:" + sp + " HTTP/1.1\r\n\r\n"},
		{Name: "rebind-metadata", Kind: "proxy", Raw: "CONNECT metadata.test:80 HTTP/1.1\r\n\r\n"},
		{Name: "smuggle-cl-te", Kind: "proxy", Raw: "POST http://goproxy.test:" + mp + "/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET http://127.0.0.1:" + sp + "/ HTTP/1.1\r\n\r\n"},
		{Name: "host-loopback-forward", Kind: "proxy", Raw: "GET http://127.0.0.1:" + sp + "/ HTTP/1.1\r\n\r\n"},
		{Name: "host-loopback-direct", Kind: "tcp", Addr: "127.0.0.1:" + sp},
		{Name: "udp-resolver", Kind: "udp", Addr: "127.0.0.1:" + strconv.Itoa(udpPort)},
	}
	wantReasons := map[string]string{
		"name-not-listed":        "example.org:443 is not in the allowlist",
		"ipv4-literal":           "127.0.0.1:" + sp + " is an address, not a name in the allowlist",
		"ipv6-literal":           "[::1]:" + sp + " is an address, not a name in the allowlist",
		"listed-name-other-port": "goproxy.test:" + sp + " is not in the allowlist",
		"connect-host-mismatch":  "differs from the request target",
		"suffix-look-alike":      "evil-example.com:443 is not in the allowlist",
		"rebind-loopback":        "resolves to 127.0.0.1, a loopback address not in the allowlist",
		"rebind-metadata":        "resolves to 169.254.169.254, a link-local address not in the allowlist",
		"smuggle-cl-te":          "both Content-Length and Transfer-Encoding",
	}
	attackJSON, _ := json.Marshal(attacks)
	script := `set -e
go mod download
go list -m -f '{{.Dir}}' example.test/hello
git clone -q http://git.test:` + gp + `/repo.git clone
cat clone/README
echo DOWNLOADS-OK
execx-attack net "$1"`
	var table strings.Builder
	fmt.Fprintf(&table, "%-7s %-9s %-8s %-9s %s\n", "user", "mode", "go+git", "attacks", "refusals")
	for _, u := range attackUsers() {
		for _, mode := range []string{"strict", "landlock"} {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				ws := filepath.Join(publicTempDir(t, "execx-allow-"), "ws")
				writeFile(t, filepath.Join(ws, "go.mod"), "module user.test/app\n\ngo 1.22\n\nrequire example.test/hello v1.0.0\n")
				for _, p := range []string{ws, filepath.Join(ws, "go.mod")} {
					if err := os.Chown(p, u.uid(), u.gid()); err != nil {
						t.Fatal(err)
					}
				}
				modBefore, gitBefore := modHits.Load(), gitHits.Load()
				cfg := attackRunner{Mode: mode, WS: ws, Bin: e.bin, Program: "sh", Network: NetworkAllow,
					Args:       []string{"-c", script, "sh", string(attackJSON)},
					Programs:   []string{"go", "git"},
					Path:       []string{filepath.Dir(goBin)},
					AllowHosts: []string{"goproxy.test:" + mp, "git.test:" + gp, "127.0.0.1:" + mp, "127.0.0.1:" + gp, "rebind.test:" + sp, "metadata.test:80", "*.example.com"},
					Hosts:      map[string]string{"goproxy.test": "127.0.0.1", "git.test": "127.0.0.1", "rebind.test": "127.0.0.1", "metadata.test": "169.254.169.254", "evil-example.com": "127.0.0.1"},
					Env: map[string]string{"GOPROXY": "http://goproxy.test:" + mp, "GOFLAGS": "-mod=mod", "GONOSUMDB": "*", "GOSUMDB": "off",
						"GOTOOLCHAIN": "local", "GOPATH": filepath.Join(ws, "gopath"), "GOCACHE": filepath.Join(ws, "gocache"), "HOME": ws,
						"GIT_CONFIG_NOSYSTEM": "1", "PATH": e.bin + ":" + filepath.Dir(goBin) + ":/usr/bin:/bin"},
				}
				rep, _ := runAttackRunner(t, e, u, cfg, "unused")
				if !strings.Contains(rep.Output, "DOWNLOADS-OK") || !strings.Contains(rep.Output, marker) {
					t.Fatalf("go mod download and git clone through the proxy failed:\n%s\nnetwork %+v", rep.Output, rep.Network)
				}
				// From outside: the module is in the task's module cache, the
				// clone in its workspace, and both servers were reached.
				if _, err := os.Stat(filepath.Join(ws, "gopath", "pkg", "mod", "example.test", "hello@v1.0.0", "hello.go")); err != nil {
					t.Errorf("module not in the task's cache: %v", err)
				}
				if b, _ := os.ReadFile(filepath.Join(ws, "clone", "README")); !strings.Contains(string(b), marker) {
					t.Errorf("clone README %q", b)
				}
				if modHits.Load() == modBefore || gitHits.Load() == gitBefore {
					t.Errorf("servers saw no request (module %d, git %d)", modHits.Load()-modBefore, gitHits.Load()-gitBefore)
				}
				said := parseAttacks(rep.Output)
				blocked := 0
				for _, a := range attacks {
					v, ran := said[a.Name]
					switch {
					case !ran:
						t.Errorf("attack %s did not run:\n%s", a.Name, rep.Output)
					case v == "ok":
						t.Errorf("attack %s got through", a.Name)
					default:
						blocked++
					}
				}
				if n := svcAccepted(); n != 0 {
					t.Errorf("the host's loopback service saw %d connections", n)
				}
				if got := udpReceived(); got != "" {
					t.Errorf("the host's UDP listener received %q", got)
				}
				if rep.Network == nil || rep.Network.Mode != NetworkAllow {
					t.Fatalf("network report %+v", rep.Network)
				}
				var reasons []string
				for _, r := range rep.Network.Refused {
					reasons = append(reasons, r.Reason)
				}
				for name, want := range wantReasons {
					found := false
					for _, r := range reasons {
						found = found || strings.Contains(r, want)
					}
					if !found {
						t.Errorf("%s: no refusal saying %q in %q", name, want, reasons)
					}
				}
				var hosts []string
				for _, a := range rep.Network.Allowed {
					hosts = append(hosts, a.Host)
					if a.BytesIn == 0 || a.BytesOut == 0 {
						t.Errorf("allowed %+v moved no bytes", a)
					}
				}
				if !containsStr(hosts, "goproxy.test") || !containsStr(hosts, "git.test") {
					t.Errorf("allowed %v; want goproxy.test and git.test", hosts)
				}
				fmt.Fprintf(&table, "%-7s %-9s %-8s %d/%-7d %d\n", u.name, mode, "ok", blocked, len(attacks), len(rep.Network.Refused))
			})
		}
	}
	t.Logf("\n%s", table.String())
}

// TestNetworkAllowLimitsAndBridges: a task over its connection limit is
// refused, and a task cannot reach another task's proxy listener (each
// exists only in its own task's network namespace): the other task's
// proxy sees nothing.
func TestNetworkAllowLimitsAndBridges(t *testing.T) {
	needLandlock(t)
	needNamespaces(t)
	if os.Geteuid() != 0 {
		t.Skip("runs the runner in-process as root")
	}
	port, hits := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	hp := "svc.test:" + strconv.Itoa(port)
	mk := func(max int) (*Policy, Options) {
		p := policyFor(t, IsolationStrict, "sh", attackName)
		p.Path = []string{filepath.Dir(selfLink(t)), "/usr/bin", "/bin"}
		p.Network = NetworkPolicy{Mode: NetworkAllow, Allow: []string{hp, "127.0.0.1:" + strconv.Itoa(port)}, MaxConnections: max}
		return p, Options{Resolve: testResolver(map[string]string{"svc.test": "127.0.0.1"})}
	}
	// Too many connections.
	p, opt := mk(2)
	var list []netAttack
	for i := range 4 {
		list = append(list, netAttack{Name: fmt.Sprintf("conn-%d", i), Kind: "proxy", Raw: "GET http://" + hp + "/ HTTP/1.1\r\n\r\n"})
	}
	b, _ := json.Marshal(list)
	res := mustRun(t, p, NewTask(attackName, "net", string(b)), opt)
	said := parseAttacks(res.Output)
	if said["conn-0"] != "ok" || said["conn-1"] != "ok" || said["conn-2"] == "ok" || said["conn-3"] == "ok" {
		t.Errorf("with a limit of 2: %v\n%s", said, res.Output)
	}
	if hits.Load() != 2 {
		t.Errorf("the server saw %d requests; want 2", hits.Load())
	}
	if len(res.Network.Refused) != 1 || !strings.Contains(res.Network.Refused[0].Reason, "connection limit 2") || res.Network.Refused[0].Count != 2 {
		t.Errorf("refused %+v", res.Network.Refused)
	}
	// Another task's bridge: A holds its listener while B, in a network
	// namespace of its own, tries 127.0.0.1:ProxyPort.
	pa, opta := mk(0)
	aDone := make(chan *Result, 1)
	go func() {
		r, err := Run(context.Background(), pa, sh("sleep 2"), opta)
		if err != nil {
			t.Errorf("task A: %v", err)
		}
		aDone <- r
	}()
	time.Sleep(500 * time.Millisecond)
	pb := policyFor(t, IsolationStrict, attackName)
	pb.Path = p.Path
	b, _ = json.Marshal([]netAttack{{Name: "other-bridge", Kind: "tcp", Addr: "127.0.0.1:" + strconv.Itoa(ProxyPort)}})
	resB := mustRun(t, pb, NewTask(attackName, "net", string(b)), Options{})
	if v := parseAttacks(resB.Output)["other-bridge"]; v == "ok" || v == "" {
		t.Errorf("other task's bridge: %q\n%s", v, resB.Output)
	}
	resA := <-aDone
	if resA == nil || len(resA.Network.Allowed)+len(resA.Network.Refused) != 0 {
		t.Errorf("task A's proxy saw traffic: %+v", resA)
	}
}

// selfLink is a link to this test binary named attackName, in a directory
// of its own.
func selfLink(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), attackName)
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	return link
}
