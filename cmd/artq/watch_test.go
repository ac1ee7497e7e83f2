package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/art-runtime/art/internal/cli"
)

// artq runs the CLI in-process with the given streams.
func artq(ctx context.Context, std cli.IO, args ...string) int {
	c := &CLI{}
	return cli.Run(ctx, "artq", description, c, args, std, options(c)...)
}

// TestStatusWatchRedraws: on a terminal, --watch clears the screen and
// redraws the table on every interval until interrupted.
func TestStatusWatchRedraws(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "q")
	var out, errb bytes.Buffer
	std := cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}
	if code := artq(context.Background(), std, "--dir", dir, "enqueue", "--id", "a", "--", "true"); code != 0 {
		t.Fatalf("enqueue: exit %d: %s", code, errb.String())
	}
	out.Reset()
	std.OutTTY = true
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(300*time.Millisecond, func() { cancel(&cli.SignalError{Signal: syscall.SIGINT}) })
	code := artq(ctx, std, "--dir", dir, "status", "--watch", "--interval", "50ms")
	if code != 130 {
		t.Errorf("status --watch interrupted: exit %d; want 130", code)
	}
	if n := strings.Count(out.String(), "\x1b[H\x1b[2JEvery 50ms: artq status"); n < 3 {
		t.Errorf("%d redraws in 300ms at 50ms intervals; want several:\n%q", n, out.String())
	}
	if !strings.Contains(out.String(), "ID  STATE   ATTEMPTS  PROGRAM") {
		t.Errorf("no table in the redraw:\n%s", out.String())
	}
}
