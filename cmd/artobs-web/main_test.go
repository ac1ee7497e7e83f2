package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/art-runtime/art/internal/systest"
)

// TestServeExecsWeb: `artobs serve` installed beside artobs-web replaces
// itself with it (one process, the same pid), passes the flags and the
// token (in the environment, not argv), serves, and exits 130 on SIGINT.
func TestServeExecsWeb(t *testing.T) {
	dir := t.TempDir()
	args := []string{"build"}
	if systest.Race {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "-o", dir+"/", "../artobs", ".")...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	home := t.TempDir()
	const token = "0123456789abcdef-exec-test"
	cmd := exec.Command(filepath.Join(dir, "artobs"), "--dir", home, "serve", "--listen", "127.0.0.1:0", "--token", token)
	cmd.Env = append(os.Environ(), "GORACE="+systest.NoExitSleep())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %q: %v", line, err)
	}
	m := regexp.MustCompile(`read-only view of (\S+) on (http://127\.0\.0\.1:\d+/) \(token required\)`).FindStringSubmatch(line)
	if m == nil || m[1] != home {
		t.Fatalf("artobs serve said %q", line)
	}
	argv, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	if a := strings.ReplaceAll(string(argv), "\x00", " "); !strings.HasPrefix(a, "artobs-web --dir "+home+" --listen 127.0.0.1:0") || strings.Contains(a, token) {
		t.Errorf("the serving process runs %q: want artobs-web, without the token", a)
	}
	for _, c := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer " + token, 200}} {
		req, _ := http.NewRequest("GET", m[2]+"api/queues", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("auth %q: %d %s, want %d", c.auth, resp.StatusCode, body, c.want)
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { io.Copy(io.Discard, stderr); done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
			t.Errorf("after SIGINT: %v, want exit 130", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("still serving 30s after SIGINT")
	}
}
