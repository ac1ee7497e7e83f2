package execcli

import (
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/art-runtime/art/internal/execcli/runcmd"
)

// kongParse parses args with kong and the real grammar; ok is false when
// kong refuses them or they are not the run command.
func kongParse(t testing.TB, args []string) (*runcmd.Cmd, bool) {
	t.Helper()
	var grammar CLI
	exited := false
	parser, err := kong.New(&grammar, kong.Name("artexec"), kong.Writers(io.Discard, io.Discard),
		kong.Exit(func(int) { exited = true }), kong.Vars{"version": "test"})
	if err != nil {
		t.Fatal(err)
	}
	kctx, err := parser.Parse(args)
	if err != nil || exited || kctx.Command() == "" || !strings.HasPrefix(kctx.Command(), "run") {
		return nil, false
	}
	return (*runcmd.Cmd)(&grammar.Run), true
}

// checkFast: whatever the fast parser accepts, kong accepts and parses to
// the identical RunCmd.
func checkFast(t testing.TB, args []string, env map[string]string) {
	t.Helper()
	fast, ok := runcmd.Parse(args, func(k string) string { return env[k] })
	if !ok {
		return
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	slow, ok := kongParse(t, args)
	if !ok {
		t.Fatalf("fastParse accepted %q but kong refuses it", args)
	}
	// kong turns each invalid UTF-8 byte of an argument into U+FFFD; the
	// fast parser passes arguments through untouched, as exec would.
	for i, a := range fast.Command {
		fast.Command[i] = string([]rune(a))
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("args %q:\nfast %#v\nkong %#v", args, fast, slow)
	}
}

func TestFastParseMatchesKong(t *testing.T) {
	accepted := [][]string{
		{"run", "--", "true"},
		{"run", "true"},
		{"run", "--timeout", "30s", "--", "go", "test", "./..."},
		{"run", "--timeout=1m30s", "--kill-after", "2s", "--grace=0s", "--", "sh", "-c", "echo --timeout"},
		{"run", "--allow", "go", "--allow=git", "--context", "a.md", "--context", "b.md", "--env", "HOME", "--set", "A=1,2", "--", "go"},
		{"run", "--policy", "p.json", "--manifest", "t.json"},
		{"run", "--isolation", "landlock", "--isolation-best-effort", "--stream", "--", "make"},
		{"run", "--output-bytes", "1048576", "--cpu-seconds=0", "--memory-bytes", "4096", "--processes", "9", "--file-bytes", "1", "--open-files", "64", "--", "x"},
		{"run", "--max-timeout", "1h", "--max-output=99", "--workspace", "/w", "--cwd", "sub", "--", "x", "--", "y"},
		{"run", "--", "--"},
	}
	for _, args := range accepted {
		if _, ok := runcmd.Parse(args, func(string) string { return "" }); !ok {
			t.Errorf("fastParse declined %q", args)
		}
		checkFast(t, args, nil)
	}
	checkFast(t, []string{"run", "--", "true"}, map[string]string{"ART_POLICY": "/etc/art/policy.json"})

	declined := [][]string{
		{"run", "--help"}, {"run", "-h", "--", "x"}, {"run", "-o", "json", "--", "x"}, {"run", "--dir", "d", "--", "x"},
		{"run", "--timeout", "soon", "--", "x"}, {"run", "--output-bytes", "010", "--", "x"}, {"run", "--output-bytes", "-1", "--", "x"},
		{"run", "--isolation", "chroot", "--", "x"}, {"run", "--stream=true", "--", "x"}, {"run", "--timeout", "1s", "--timeout", "2s", "--", "x"},
		{"run", "--manifest", "-"}, {"run"}, {"check-policy", "p.json"}, {"isolation"}, {"run", "--bogus", "--", "x"},
		{"run", "--timeout"}, {"run", "--policy", "--", "x"},
	}
	for _, args := range declined {
		if _, ok := runcmd.Parse(args, func(string) string { return "" }); ok {
			t.Errorf("fastParse accepted %q; kong must handle it", args)
		}
	}
}

// Random mixes of every flag in valid and invalid forms (FuzzFastParse
// explores further; each accepted case builds kong's model, so keep it short).
func TestFastParseRandom(t *testing.T) {
	pieces := [][]string{
		{"--timeout", "5s"}, {"--timeout=250ms"}, {"--timeout", "x"}, {"--kill-after=1s"}, {"--grace", "3s"},
		{"--output-bytes", "100"}, {"--output-bytes=0x10"}, {"--cpu-seconds", "3"}, {"--memory-bytes=12"},
		{"--processes", "7"}, {"--file-bytes", "9"}, {"--open-files=16"}, {"--max-output", "5"}, {"--max-timeout=2h"},
		{"--allow", "go"}, {"--allow=sh"}, {"--context", "c.md"}, {"--env", "X"}, {"--set", "K=V"}, {"--set=K=a,b"},
		{"--policy", "p.json"}, {"--workspace=/ws"}, {"--cwd", "d"}, {"--manifest", "m.json"},
		{"--isolation", "strict"}, {"--isolation=none"}, {"--isolation", "bogus"}, {"--stream"}, {"--isolation-best-effort"},
		{"-o", "text"}, {"--"}, {"prog"}, {"-x"}, {"a,b"},
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for range 300 {
		args := []string{"run"}
		for range rng.IntN(8) {
			args = append(args, pieces[rng.IntN(len(pieces))]...)
		}
		if rng.IntN(4) > 0 {
			args = append(args, "--", "prog", "--flag")
		}
		checkFast(t, args, nil)
	}
}

func FuzzFastParse(f *testing.F) {
	f.Add("run\x00--timeout\x0030s\x00--\x00go\x00test")
	f.Add("run\x00--allow=go\x00--set\x00A=1\x00prog")
	f.Add("run\x00--output-bytes\x00007\x00--\x00x")
	f.Fuzz(func(t *testing.T, in string) {
		checkFast(t, strings.Split(in, "\x00"), nil)
	})
}
