package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"artobs": func() { os.Exit(run()) }})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			// A -race binary sleeps a second at exit unless told not to.
			env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mode":  mode,
			"lines": lines,
			"code":  exitCode,
			"chop":  chop,
		},
	})
}

// mode FILE PERM checks a file's permission bits (octal).
func mode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: mode FILE PERM")
	}
	st, err := os.Lstat(ts.MkAbs(args[0]))
	ts.Check(err)
	want, err := strconv.ParseUint(args[1], 8, 32)
	ts.Check(err)
	got := uint64(st.Mode().Perm())
	if (got == want) == neg {
		ts.Fatalf("%s has mode %#o; want %s%#o", args[0], got, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// lines FILE N checks that a file has exactly N lines.
func lines(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: lines FILE N")
	}
	n := strings.Count(ts.ReadFile(args[0]), "\n")
	if (fmt.Sprint(n) == args[1]) == neg {
		ts.Fatalf("%s has %d lines; want %s", args[0], n, args[1])
	}
}

// code N PROGRAM [ARGS...] runs a program and checks its exit code.
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

// chop FILE removes the file's last byte (the newline txtar always adds),
// leaving a torn last record.
func chop(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: chop FILE")
	}
	path := ts.MkAbs(args[0])
	st, err := os.Stat(path)
	ts.Check(err)
	ts.Check(os.Truncate(path, st.Size()-1))
}
