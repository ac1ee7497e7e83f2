package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/internal/systest"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"artrelease": func() { os.Exit(run()) }})
}

// TestScripts runs testdata/*.txtar. Git is isolated from the machine: a
// HOME inside the work directory, no system config, a fixed identity and
// fixed commit times, so every script's commits — and releases — have the
// same ids everywhere.
//
// The go command's caches stay the machine's (the binary scripts build Go
// programs, as a release does), found before HOME is replaced.
func TestScripts(t *testing.T) {
	goEnv := map[string]string{}
	if out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPROXY").Output(); err == nil {
		if v := strings.Split(strings.TrimSpace(string(out)), "\n"); len(v) == 3 {
			goEnv["GOCACHE"], goEnv["GOMODCACHE"], goEnv["GOPROXY"] = v[0], v[1], v[2]
		}
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, "home")
			env.Setenv("HOME", home)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			env.Setenv("GIT_AUTHOR_NAME", "A U Thor")
			env.Setenv("GIT_AUTHOR_EMAIL", "author@example.com")
			env.Setenv("GIT_COMMITTER_NAME", "C O Mitter")
			env.Setenv("GIT_COMMITTER_EMAIL", "committer@example.com")
			env.Setenv("GIT_AUTHOR_DATE", "@1767366245 +0000")
			env.Setenv("GIT_COMMITTER_DATE", "@1767366245 +0000")
			for k, v := range goEnv {
				env.Setenv(k, v)
			}
			return os.MkdirAll(home, 0o755)
		},
		Cmds: systest.ScriptCmds(nil),
	})
}
