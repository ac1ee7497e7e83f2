package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

func TestMain(m *testing.M) {
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	testscript.Main(m, map[string]func(){"artq": func() { os.Exit(run()) }})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			env.Setenv("ART_HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("Q", filepath.Join(env.WorkDir, "home", "queues", "default"))
			env.Setenv("GORACE", goraceFast())
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfor":  waitFor,
			"mode":     checkMode,
			"truncate": truncateFile,
			"corrupt":  corruptFile,
			"sleep":    sleep,
			"code":     exitCode,
			"procs":    procs,
		},
	})
}

// goraceFast keeps the race detector's options but drops the one-second
// sleep a race-enabled binary takes at exit (atexit_sleep_ms), which would
// otherwise add a second to every artq the scripts run.
func goraceFast() string {
	return strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
}

// waitfor DIR ID STATE: poll the queue in DIR (read-only) until task ID is
// in STATE, for up to 30 seconds.
func waitFor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: waitfor DIR ID STATE")
	}
	dir, id, want := ts.MkAbs(args[0]), args[1], queue.TaskState(args[2])
	deadline := time.Now().Add(30 * time.Second)
	var last queue.TaskState
	for time.Now().Before(deadline) {
		b, err := file.Open(dir, file.Options{ReadOnly: true})
		ts.Check(err)
		q, err := queue.Inspect(context.Background(), b)
		ts.Check(err)
		st, err := q.Status(context.Background(), id)
		b.Close()
		if err == nil {
			last = st.State
			if st.State == want {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Fatalf("task %s is %q after 30s; want %s", id, last, want)
}

// mode PERM PATH...: each path has exactly these permission bits.
func checkMode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: mode PERM PATH...")
	}
	want, err := strconv.ParseUint(args[0], 8, 32)
	ts.Check(err)
	for _, p := range args[1:] {
		fi, err := os.Stat(ts.MkAbs(p))
		ts.Check(err)
		if got := fi.Mode().Perm(); (got == os.FileMode(want)) == neg {
			ts.Fatalf("%s has mode %#o; want %s%#o", p, got, map[bool]string{true: "not ", false: ""}[neg], want)
		}
	}
}

// truncate PATH SIZE: cut a file (SIZE may be -N: N bytes off the end).
func truncateFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: truncate PATH SIZE")
	}
	path := ts.MkAbs(args[0])
	n, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	if n < 0 {
		fi, err := os.Stat(path)
		ts.Check(err)
		n += fi.Size()
	}
	ts.Check(os.Truncate(path, n))
}

// corrupt PATH OFFSET: flip one bit of the byte at OFFSET.
func corruptFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: corrupt PATH OFFSET (negative: from the end)")
	}
	path := ts.MkAbs(args[0])
	off, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	ts.Check(err)
	defer f.Close()
	if off < 0 { // from the end: -1 is the last byte
		fi, err := f.Stat()
		ts.Check(err)
		off += fi.Size()
	}
	b := []byte{0}
	_, err = f.ReadAt(b, off)
	ts.Check(err)
	b[0] ^= 0x01
	_, err = f.WriteAt(b, off)
	ts.Check(err)
}

// sleep D: wait (a Go duration).
func sleep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sleep DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d)
}

// code N PROGRAM ARGS...: run PROGRAM like exec does (stdout and stderr
// are kept for the next stdout/stderr checks) and require exit status N.
func exitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: code N PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d; want %d", strings.Join(args[1:], " "), got, want)
	}
}
