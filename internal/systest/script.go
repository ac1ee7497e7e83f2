package systest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// ScriptCmd is a testscript command.
type ScriptCmd = func(ts *testscript.TestScript, neg bool, args []string)

// scriptWait bounds every wait of the script commands: generous, since a
// wait is for a condition and a loaded machine must not fail it.
const scriptWait = time.Minute

// ScriptCmds returns the testscript commands every tool's scripts share,
// plus the tool's own (own may not redefine a shared one):
//
//	exits CODE PROGRAM [ARGS...]  run PROGRAM as exec does (stdout and
//	                              stderr kept for the next checks) and
//	                              require exit code CODE exactly
//	mode PERM PATH...             each PATH (not followed if a symlink) has
//	                              exactly the permission bits PERM (octal)
//	waitfor FILE [REGEXP]         wait until FILE exists (and matches)
//	procs ARG N | ! procs ARG     wait until at least N / no processes have
//	                              ARG as one whole argument
//	lines FILE N                  FILE has exactly N lines
//	truncate PATH SIZE            cut PATH to SIZE bytes (-N: N off the end)
//	corrupt PATH OFFSET           flip one bit of the byte at OFFSET
//	                              (negative: from the end)
//	sleep DURATION                wait a Go duration
//
// exits is the one way the scripts assert an exit code: testscript's exec
// tells only zero from non-zero, and keeps the status to itself, so a
// command after it could not check the code.
func ScriptCmds(own map[string]ScriptCmd) map[string]ScriptCmd {
	cmds := map[string]ScriptCmd{
		"exits":    exits,
		"mode":     mode,
		"waitfor":  waitFor,
		"procs":    procs,
		"lines":    lines,
		"truncate": truncate,
		"corrupt":  corrupt,
		"sleep":    sleep,
	}
	for name, c := range own {
		if _, ok := cmds[name]; ok {
			panic("systest.ScriptCmds: " + name + " is a shared command")
		}
		cmds[name] = c
	}
	return cmds
}

// NoExitSleep is $GORACE plus atexit_sleep_ms=0: a -race binary otherwise
// sleeps a second at every exit, which would add a second to every tool a
// script runs and test nothing.
func NoExitSleep() string {
	return strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
}

func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
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

func mode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: mode PERM PATH...")
	}
	want, err := strconv.ParseUint(args[0], 8, 32)
	if err != nil {
		ts.Fatalf("mode: bad permission bits %q", args[0])
	}
	for _, p := range args[1:] {
		fi, err := os.Lstat(ts.MkAbs(p))
		ts.Check(err)
		if got := fi.Mode().Perm(); (got == os.FileMode(want)) == neg {
			not := ""
			if neg {
				not = "not "
			}
			ts.Fatalf("%s has mode %#o; want %s%#o", p, got, not, want)
		}
	}
}

func waitFor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfor FILE [REGEXP]")
	}
	var re *regexp.Regexp
	if len(args) == 2 {
		var err error
		if re, err = regexp.Compile(args[1]); err != nil {
			ts.Fatalf("waitfor: %v", err)
		}
	}
	path := ts.MkAbs(args[0])
	err := poll(func() error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if re != nil && !re.Match(b) {
			return fmt.Errorf("it does not match %q; it holds:\n%s", re, b)
		}
		return nil
	})
	if err != nil {
		ts.Fatalf("waitfor %s: after %v: %v", args[0], scriptWait, err)
	}
}

func procs(ts *testscript.TestScript, neg bool, args []string) {
	if neg && len(args) == 1 {
		if err := poll(func() error { return noneWithArg(args[0]) }); err != nil {
			ts.Fatalf("after %v: %v", scriptWait, err)
		}
		return
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: procs ARG N | ! procs ARG")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	if err := poll(func() error { return atLeastWithArg(args[0], n) }); err != nil {
		ts.Fatalf("after %v: %v", scriptWait, err)
	}
}

func lines(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: lines FILE N")
	}
	n := strings.Count(ts.ReadFile(args[0]), "\n")
	if (strconv.Itoa(n) == args[1]) == neg {
		ts.Fatalf("%s has %d lines; want %s", args[0], n, args[1])
	}
}

func truncate(ts *testscript.TestScript, neg bool, args []string) {
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

func corrupt(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: corrupt PATH OFFSET (negative: from the end)")
	}
	off, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_RDWR, 0)
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

func sleep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sleep DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d)
}

// poll waits up to scriptWait for cond.
func poll(cond func() error) error { return waitUntil(scriptWait, cond) }
