package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	testscript.Main(m, map[string]func(){"artagent": func() { os.Exit(run()) }})
}

func TestScripts(t *testing.T) {
	testdata, err := filepath.Abs("../../testdata/agent")
	if err != nil {
		t.Fatal(err)
	}
	gocache := os.Getenv("GOCACHE")
	if gocache == "" {
		out, err := exec.Command("go", "env", "GOCACHE").Output()
		if err != nil {
			t.Fatalf("go env GOCACHE: %v", err)
		}
		gocache = strings.TrimSpace(string(out))
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			// TESTDATA holds the Go project, the mock scripts, model.sh and
			// the fake agy. The verify command `go test` needs a build cache
			// and GOPATH; the scripts pass them to tools with --env. The
			// shared build cache keeps `go test` fast and is safe to share.
			env.Setenv("TESTDATA", testdata)
			env.Setenv("GOCACHE", gocache)
			env.Setenv("GOPATH", filepath.Join(env.WorkDir, ".gopath"))
			env.Setenv("GOTOOLCHAIN", "local")
			env.Setenv("GOFLAGS", "-buildvcs=false")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"events":  events,
			"waitfor": waitFor,
		},
		// ARTAGENT_UPDATE_SCRIPTS=1 rewrites the want files of failing
		// `cmp` commands in the scripts; review the diff before committing.
		UpdateScripts: os.Getenv("ARTAGENT_UPDATE_SCRIPTS") != "",
	})
}

// events FILE writes the last command's stdout, AgentEvent JSON Lines, to
// FILE without what differs from run to run (time, latency_ms), keys
// sorted, one event per line: `cmp FILE want` then compares whole events.
func events(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: events FILE")
	}
	if err := os.WriteFile(ts.MkAbs(args[0]), []byte(normalizeEvents(ts, ts.ReadFile("stdout"))), 0o644); err != nil {
		ts.Fatalf("events: %v", err)
	}
}

func normalizeEvents(ts *testscript.TestScript, s string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			ts.Fatalf("not a JSON line: %s", line)
		}
		delete(m, "time")
		delete(m, "latency_ms")
		out, _ := json.Marshal(m) // map keys sorted
		b.Write(out)
		b.WriteByte('\n')
	}
	return b.String()
}

// waitfor FILE REGEXP waits up to a minute for FILE to exist and match.
func waitFor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitfor FILE REGEXP")
	}
	re, err := regexp.Compile(args[1])
	if err != nil {
		ts.Fatalf("waitfor: %v", err)
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && re.Match(b) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(path)
	ts.Fatalf("%s did not match %q within a minute; it holds:\n%s", args[0], args[1], b)
}
