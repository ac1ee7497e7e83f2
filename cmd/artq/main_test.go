package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/art-runtime/art/internal/otlpcli"
	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
)

func TestMain(m *testing.M) {
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	testscript.Main(m, map[string]func(){"artq": func() { os.Exit(run()) }, "artobs-otlp": func() { os.Exit(otlpcli.Main()) }})
}

func TestScripts(t *testing.T) {
	// $ARTQ_FAILPOINT_BUILD is an artq built with -tags failpoint, for the
	// scripts that stop a worker at a failpoint: the test binary, like any
	// normal build, ignores ARTQ_FAILPOINT.
	fp := failpointArtq(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			env.Setenv("ARTQ_FAILPOINT_BUILD", fp)
			env.Setenv("ART_HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("Q", filepath.Join(env.WorkDir, "home", "queues", "default"))
			env.Setenv("GORACE", systest.NoExitSleep())
			return nil
		},
		Cmds: systest.ScriptCmds(map[string]systest.ScriptCmd{
			"waitstate": waitState,
		}),
	})
}

// waitstate DIR ID STATE: poll the queue in DIR (read-only) until task ID
// is in STATE, for up to 30 seconds.
func waitState(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: waitstate DIR ID STATE")
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
