package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/art-runtime/art/internal/otlpcli"
	"github.com/art-runtime/art/internal/systest"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"artobs-otlp": func() { os.Exit(otlpcli.Main()) }})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			env.Setenv("GORACE", systest.NoExitSleep())
			return nil
		},
		Cmds: systest.ScriptCmds(nil),
	})
}
