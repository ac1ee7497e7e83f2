package main

import (
	"os"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/art-runtime/art/internal/execcli"
	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/execx"
)

func TestMain(m *testing.M) {
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	testscript.Main(m, map[string]func(){"artexec": func() { os.Exit(run(execcli.Main)) }})
}

// TestScripts runs testdata/*.txtar, one behaviour of the CLI each.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			env.Setenv("GORACE", systest.NoExitSleep())
			return nil
		},
		Cmds: systest.ScriptCmds(map[string]systest.ScriptCmd{
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
		}),
	})
}
