// Package e2e_test runs the six tools together, as built binaries on a
// script's PATH: the pipeline of a queue of agent runs, observed through
// one event sink, tracked by a goal and released (testdata/e2e).
//
// The binaries are built once by TestMain (with -race when the test is),
// so a script exercises exactly what a user installs; nothing here imports
// a command's package.
package e2e_test

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/internal/systest"
	"github.com/rogpeppe/go-internal/testscript"
)

// tools are the commands the scripts run, and artexec-shim, which they
// use from beside themselves as every task's supervisor and exec stage,
// artexec-cli, which artexec hands every invocation but a plain run to,
// and artobs-otlp, which artq and artagent start beside themselves for an
// otlphttp:// events sink.
var tools = []string{"artq", "artexec", "artagent", "artgoal", "artobs", "artrelease", "artexec-shim", "artexec-cli", "artobs-otlp"}

var (
	binDir  string // the built tools
	repo    string // the repository root
	goCache string // the caller's build cache, shared with the agent's go runs
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	var err error
	if repo, err = filepath.Abs(".."); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "art-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if raceEnabled {
		args = append(args, "-race")
	}
	for _, t := range tools {
		args = append(args, "./cmd/"+t)
	}
	start := time.Now()
	// Once more on failure: a build cache shared with concurrent builds
	// can lose an entry under a compile (seen as "could not import").
	for try := 1; ; try++ {
		build := exec.Command("go", args...)
		build.Dir = repo
		out, err := build.CombinedOutput()
		if err == nil {
			break
		}
		if try == 2 {
			fmt.Fprintf(os.Stderr, "e2e: go build: %v\n%s", err, out)
			return 1
		}
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "e2e: built %s in %s\n", strings.Join(tools, ", "), time.Since(start).Round(time.Millisecond))
	}
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: go env GOCACHE:", err)
		return 1
	}
	goCache = strings.TrimSpace(string(out))
	return m.Run()
}

func TestPipeline(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join(repo, "testdata", "e2e"),
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", binDir+string(filepath.ListSeparator)+os.Getenv("PATH"))
			env.Setenv("REPO", repo)
			env.Setenv("ART_HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("GOCACHE", goCache)
			env.Setenv("GOPATH", filepath.Join(env.WorkDir, "gopath"))
			env.Setenv("GOTOOLCHAIN", "local")
			// Race-enabled tools would sleep a second at every exit.
			env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
			for k, v := range map[string]string{
				"GIT_AUTHOR_NAME": "e2e", "GIT_AUTHOR_EMAIL": "e2e@example.com",
				"GIT_COMMITTER_NAME": "e2e", "GIT_COMMITTER_EMAIL": "e2e@example.com",
				"GIT_AUTHOR_DATE": "2026-01-02T15:04:05Z", "GIT_COMMITTER_DATE": "2026-01-02T15:04:05Z",
				"GIT_CONFIG_NOSYSTEM": "1",
			} {
				env.Setenv(k, v)
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"procs":   procs,
			"eventid": eventID,
		},
	})
}

// withArg returns the pids of processes (other than this one) that have
// arg as one whole argument.
func withArg(ts *testscript.TestScript, arg string) []int {
	pids, err := systest.PidsWithArg(arg)
	ts.Check(err)
	return pids
}

// procs ARG N: wait (up to 60 s) until at least N processes have ARG as an
// argument. ! procs ARG: none has (checked at once: the caller waited for
// the task's end, and nothing of it may be left by then).
func procs(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		if len(args) != 1 {
			ts.Fatalf("usage: ! procs ARG")
		}
		if left := withArg(ts, args[0]); len(left) > 0 {
			ts.Fatalf("processes with argument %q survive: %v", args[0], left)
		}
		return
	}
	if len(args) != 2 {
		ts.Fatalf("usage: procs ARG N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	deadline := time.Now().Add(60 * time.Second)
	for len(withArg(ts, args[0])) < n {
		if time.Now().After(deadline) {
			ts.Fatalf("fewer than %d processes with argument %q after 60s", n, args[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eventid SINK SUBJECT TYPE VAR: set VAR to the id of the first event of
// SUBJECT and TYPE in the JSONL sink (artobs envelopes).
func eventID(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: eventid SINK SUBJECT TYPE VAR")
	}
	f, err := os.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var env struct{ ID, Subject, Type string }
		ts.Check(json.Unmarshal(sc.Bytes(), &env))
		if env.Subject == args[1] && env.Type == args[2] {
			ts.Setenv(args[3], env.ID)
			return
		}
	}
	ts.Check(sc.Err())
	ts.Fatalf("no %s event of %s in %s", args[2], args[1], args[0])
}
