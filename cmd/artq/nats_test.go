package main

import (
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/queue/nats/natstest"
)

// TestScriptsNATS runs the scripts in testdata/nats against a real embedded
// nats-server (JetStream, sync always), each in a queue of its own, so the
// CLI contract is proven on the distributed backend with the same commands
// a user types.
func TestScriptsNATS(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "nats"),
		Setup: func(env *testscript.Env) error {
			env.Setenv("ART_HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("ART_BACKEND", srv.URL())
			// One stream per script: queue names are the scripts' work dirs.
			env.Setenv("ART_QUEUE", "q"+filepath.Base(env.WorkDir)[len("script-"):])
			env.Setenv("GORACE", systest.NoExitSleep())
			return nil
		},
		Cmds: systest.ScriptCmds(nil),
	})
}
