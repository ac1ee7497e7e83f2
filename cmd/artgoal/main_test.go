package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/evidence/evidencetest"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs"
)

// commands are the programs the test binary can become: artgoal itself,
// and on Linux a variant that the kernel kills when it tries to rename
// (crash_linux_test.go).
var commands = map[string]func(){
	"artgoal": func() { os.Exit(run()) },
}

func TestMain(m *testing.M) {
	// mkqueue runs a real artq worker in this process, and the worker runs
	// each task under its own binary as a shim: this one.
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	testscript.Main(m, commands)
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			env.Setenv("ART_HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("GORACE", systest.NoExitSleep())
			return nil
		},
		Cmds: systest.ScriptCmds(map[string]systest.ScriptCmd{
			"jsonedit": jsonedit,
			"mkqueue":  mkqueue,
			"eventid":  eventid,
			"replace":  replace,
		}),
		RequireExplicitExec: false,
	})
}

// mkqueue DIR builds an artq queue in DIR with lib/queue's own API and a
// real worker running real processes, holding one task in each state:
// built (succeeded), broken (failed), nap (cancelled), slow (running: its
// worker was stopped mid-run) and later (queued). See evidencetest.Queue.
func mkqueue(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mkqueue DIR")
	}
	ws, err := os.MkdirTemp(ts.Getenv("WORK"), "ws")
	ts.Check(err)
	ts.Check(evidencetest.Queue(context.Background(), ts.MkAbs(args[0]), ws))
}

// eventid FILE LINE VAR sets $VAR to the id of the event on line LINE of
// the artobs JSONL FILE, after checking that the record verifies.
func eventid(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: eventid FILE LINE VAR")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	lines := strings.Split(ts.ReadFile(args[0]), "\n")
	if n < 1 || n > len(lines) || lines[n-1] == "" {
		ts.Fatalf("%s has no line %d", args[0], n)
	}
	env, _, err := obs.ParseEnvelope([]byte(lines[n-1]))
	ts.Check(err)
	ts.Setenv(args[2], env.ID())
}

// replace FILE OLD NEW replaces the first OLD in FILE by NEW (to tamper with
// a record); OLD must be there.
func replace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: replace FILE OLD NEW")
	}
	data := ts.ReadFile(args[0])
	if !strings.Contains(data, args[1]) {
		ts.Fatalf("%s does not contain %q", args[0], args[1])
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Replace(data, args[1], args[2], 1)), 0o600))
}

// jsonedit FILE OP PATH [JSON] edits a JSON document in place so scripts
// can forge journals without jq: OP is set, append or del; PATH is dotted
// with numeric indexes (checklist.0.evidence). The result is re-encoded
// with sorted keys, which the strict decoder does not mind.
func jsonedit(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! jsonedit")
	}
	if len(args) < 3 {
		ts.Fatalf("usage: jsonedit FILE set|append|del PATH [JSON]")
	}
	file, op, path := ts.MkAbs(args[0]), args[1], strings.Split(args[2], ".")
	var value any
	if op != "del" {
		if len(args) != 4 {
			ts.Fatalf("jsonedit %s needs a JSON value", op)
		}
		dec := json.NewDecoder(strings.NewReader(args[3]))
		dec.UseNumber()
		ts.Check(dec.Decode(&value))
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(ts.ReadFile(args[0]))))
	dec.UseNumber()
	var doc any
	ts.Check(dec.Decode(&doc))
	doc = edit(ts, doc, path, op, value)
	out, err := jsonx.MarshalIndent(doc)
	ts.Check(err)
	ts.Check(os.WriteFile(file, out, 0o644))
}

func edit(ts *testscript.TestScript, node any, path []string, op string, value any) any {
	key := path[0]
	last := len(path) == 1
	switch n := node.(type) {
	case map[string]any:
		if last {
			switch op {
			case "set":
				n[key] = value
			case "del":
				delete(n, key)
			case "append":
				arr, _ := n[key].([]any)
				n[key] = append(arr, value)
			default:
				ts.Fatalf("jsonedit: unknown op %q", op)
			}
			return n
		}
		n[key] = edit(ts, n[key], path[1:], op, value)
		return n
	case []any:
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i >= len(n) {
			ts.Fatalf("jsonedit: index %q out of range", key)
		}
		if last {
			switch op {
			case "set":
				n[i] = value
			case "del":
				return append(n[:i], n[i+1:]...)
			case "append":
				arr, _ := n[i].([]any)
				n[i] = append(arr, value)
			}
			return n
		}
		n[i] = edit(ts, n[i], path[1:], op, value)
		return n
	}
	ts.Fatalf("jsonedit: %s: not an object or array", fmt.Sprint(path))
	return nil
}
