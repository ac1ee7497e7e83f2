package execx

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/jsonx"
)

// Decoding never panics, fails only as invalid input (2), and what it
// accepts survives a round trip unchanged.
func FuzzDecodeTask(f *testing.F) {
	for _, name := range []string{"task.json", "task-minimal.json"} {
		if b, err := os.ReadFile(filepath.Join(fixtureDir(), name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{` + taskHead + `"program":"go","limits":{"timout":"1s"}}`))
	f.Add([]byte(`{` + taskHead + `"program":"go","env":{"set":{"A":"1","A":"2"}}}`))
	f.Add([]byte(`{` + taskHead + `"program":"go","limits":{"output_bytes":1e3,"timeout":"-1s"}}`))
	f.Add([]byte(`{` + taskHead + `"program":"\u0000","dir":"../..","context":["/etc/passwd"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		task, err := DecodeTask(data)
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage {
				t.Fatalf("DecodeTask(%q) = %v with exit %d; want 2", data, err, exitcode.Of(err))
			}
			return
		}
		roundTrip(t, data, task, func(b []byte) (any, error) { return DecodeTask(b) })
	})
}

func FuzzDecodePolicy(f *testing.F) {
	for _, name := range []string{"policy.json", "policy-minimal.json", "policy-strict.json"} {
		if b, err := os.ReadFile(filepath.Join(fixtureDir(), name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{` + policyHead + `"workspace":"/w","allow":["/bin/sh"],"isolation":"chroot"}`))
	f.Add([]byte(`{` + policyHead + `"workspace":"/w","max":{"memory_bytes":-5},"env_allow":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodePolicy(data)
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage {
				t.Fatalf("DecodePolicy(%q) = %v with exit %d; want 2", data, err, exitcode.Of(err))
			}
			return
		}
		if _, err := p.EffectiveLimits(NewTask("x")); err != nil {
			t.Fatalf("valid policy %q cannot give a default task its limits: %v", data, err)
		}
		roundTrip(t, data, p, func(b []byte) (any, error) { return DecodePolicy(b) })
	})
}

func roundTrip(t *testing.T, data []byte, v any, decode func([]byte) (any, error)) {
	t.Helper()
	b1, err := jsonx.Marshal(v)
	if err != nil {
		t.Fatalf("accepted %q but cannot encode it: %v", data, err)
	}
	v2, err := decode(b1)
	if err != nil {
		t.Fatalf("accepted %q but not its encoding %s: %v", data, b1, err)
	}
	b2, _ := jsonx.Marshal(v2)
	if !bytes.Equal(b1, b2) {
		t.Fatalf("round trip changed the document:\n%s\n%s", b1, b2)
	}
}

// Whatever path a task names for its dir or a context file, what is
// opened is beneath the workspace, or the task is refused (126) or
// invalid (2) — never anything else, never a panic.
func FuzzConfinement(f *testing.F) {
	root := f.TempDir()
	ws := filepath.Join(root, "ws")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{ws, outside, filepath.Join(ws, "sub", "deep")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for _, file := range []string{filepath.Join(ws, "a.md"), filepath.Join(ws, "sub", "b.md"), filepath.Join(outside, "secret")} {
		if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	links := map[string]string{
		"out":            outside,
		"out-rel":        "../outside",
		"secret":         "../outside/secret",
		"sub/up":         "..",
		"sub/upup":       "../..",
		"loop":           "loop",
		"abs-inside":     filepath.Join(ws, "a.md"),
		"sub/deep/chain": "../../out",
		"proc":           "/proc/self/root",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			f.Fatal(err)
		}
	}
	realWS, err := filepath.EvalSymlinks(ws)
	if err != nil {
		f.Fatal(err)
	}
	wsDir, err := fsx.OpenDir(realWS)
	if err != nil {
		f.Fatal(err)
	}
	defer wsDir.Close()
	for _, seed := range []string{".", "a.md", "sub", "sub/b.md", "sub/up/a.md", "..", "../outside/secret", "/etc/passwd",
		"out", "out/secret", "out-rel/secret", "secret", "sub/upup", "loop", "abs-inside", "sub/deep/chain/secret",
		"proc/etc/passwd", "a\x00b", "", "sub/../a.md", "./sub/./b.md", "sub//b.md"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		check := func(what string, file *os.File, err error) {
			if err != nil {
				if c := exitcode.Of(err); c != exitcode.Refused && c != exitcode.Usage {
					t.Fatalf("%s %q: %v with exit %d; want 126 or 2", what, rel, err, c)
				}
				return
			}
			defer file.Close()
			real, err := fdPath(file)
			if err != nil {
				t.Fatal(err)
			}
			if !within(realWS, real) {
				t.Fatalf("%s %q opened %s, outside the workspace %s", what, rel, real, realWS)
			}
		}
		dir, _, err := openDir(wsDir, realWS, rel)
		check("dir", dir, err)
		ctx, err := openContext(wsDir, rel, 1<<20)
		check("context", ctx, err)
	})
}
