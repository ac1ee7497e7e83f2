package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/art-runtime/art/lib/execx"
)

func TestMain(m *testing.M) {
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	testscript.Main(m, map[string]func(){"artexec": func() { os.Exit(run()) }})
}

// TestScripts runs testdata/*.txtar, one behaviour of the CLI each.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			// A race-enabled binary sleeps a second at exit by default.
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// exits CODE PROGRAM ARGS...: run PROGRAM and require exactly
			// exit code CODE (testscript's exec only tells zero from not).
			"exits": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 2 {
					ts.Fatalf("usage: exits CODE PROGRAM ARGS...")
				}
				want, err := strconv.Atoi(args[0])
				if err != nil {
					ts.Fatalf("exits: bad code %q", args[0])
				}
				err = ts.Exec(args[1], args[2:]...)
				got := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					got = ee.ExitCode()
				} else if err != nil {
					ts.Fatalf("exits: %v", err)
				}
				if got != want {
					ts.Fatalf("%s exited %d; want %d", args[1], got, want)
				}
			},
			// envsubst FILE...: replace $WORK in files, for documents that
			// need the script's absolute work directory.
			"envsubst": func(ts *testscript.TestScript, neg bool, args []string) {
				for _, name := range args {
					b, err := os.ReadFile(ts.MkAbs(name))
					ts.Check(err)
					b = []byte(strings.ReplaceAll(string(b), "$WORK", ts.Getenv("WORK")))
					ts.Check(os.WriteFile(ts.MkAbs(name), b, 0o644))
				}
			},
			// waitfile FILE: wait (up to 10s) until FILE exists, for
			// synchronising with a program started in the background.
			"waitfile": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 1 {
					ts.Fatalf("usage: waitfile FILE")
				}
				deadline := time.Now().Add(10 * time.Second)
				for {
					if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
						return
					}
					if time.Now().After(deadline) {
						ts.Fatalf("waitfile: %s did not appear", args[0])
					}
					time.Sleep(5 * time.Millisecond)
				}
			},
		},
	})
}
