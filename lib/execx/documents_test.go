package execx

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

const taskHead = `"apiVersion":"art/v1alpha1","kind":"Task",`
const policyHead = `"apiVersion":"art/v1alpha1","kind":"Policy",`

func TestDecodeTask(t *testing.T) {
	tests := []struct {
		in, wantErr string
	}{
		{`{` + taskHead + `"program":"go","args":["test","./..."]}`, ""},
		{`{` + taskHead + `"program":"go","limits":{"timout":"1s"}}`, "task.limits.timout: unknown field"},
		{`{` + taskHead + `"program":"go","env":{"allow":["PATH"],"sett":{}}}`, "task.env.sett: unknown field"},
		{`{` + taskHead + `"program":"go","limits":{"timeout":"soon"}}`, `task.limits.timeout: invalid duration "soon"`},
		{`{` + taskHead + `"program":"go","limits":{"output_bytes":-1}}`, "task.limits.output_bytes: must not be negative"},
		{`{` + taskHead + `"program":"go","limits":{"output_bytes":2147483648}}`, "task.limits.output_bytes: 2147483648 exceeds the hard maximum"},
		{`{` + taskHead + `"program":""}`, "task.program: required"},
		{`{` + taskHead + `"program":"go","args":["a\u0000"]}`, "task.args[0]: contains a NUL byte"},
		{`{` + taskHead + `"program":"go","env":{"set":{"A=B":"x"}}}`, "task.env.set"},
		{`{` + taskHead + `"program":"go","env":{"allow":[""]}}`, "task.env.allow[0]: empty variable name"},
		{`{` + taskHead + `"program":"go","id":"a\nb"}`, "task.id: contains a control character"},
		{`{` + taskHead + `"program":"go"} {}`, "task: trailing data"},
		{`{` + taskHead + `"program":"go","program":"rm"}`, "task.program: duplicate key"},
		{`{"apiVersion":"art/v1alpha1","kind":"Policy","program":"go"}`, `task.kind: got "Policy", want "Task"`},
	}
	for _, tt := range tests {
		task, err := DecodeTask([]byte(tt.in))
		if tt.wantErr == "" {
			if err != nil || task.Dir != "." {
				t.Errorf("DecodeTask(%s) = %+v, %v; want success with dir \".\"", tt.in, task, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("DecodeTask(%s) = %v (exit %d); want exit 2 with %q", tt.in, err, exitcode.Of(err), tt.wantErr)
		}
	}
}

func TestDecodePolicy(t *testing.T) {
	tests := []struct {
		in, wantErr string
	}{
		{`{` + policyHead + `"workspace":"/w","allow":["go"]}`, ""},
		{`{` + policyHead + `"allow":["go"]}`, "policy.workspace: required"},
		{`{` + policyHead + `"workspace":"w"}`, `policy.workspace: "w" is not an absolute path`},
		{`{` + policyHead + `"workspace":"/w","allow":["/bin/sh"]}`, `policy.allow[0]: "/bin/sh" is not a bare program name`},
		{`{` + policyHead + `"workspace":"/w","allow":[".."]}`, `policy.allow[0]`},
		{`{` + policyHead + `"workspace":"/w","path":["bin"]}`, `policy.path[0]`},
		{`{` + policyHead + `"workspace":"/w","isolation":"chroot"}`, `policy.isolation: unknown backend "chroot"`},
		{`{` + policyHead + `"workspace":"/w","max":{"timeout":"1h","memory":1}}`, "policy.max.memory: unknown field"},
		{`{` + policyHead + `"workspace":"/w","env_allow":["A=B"]}`, "policy.env_allow[0]"},
	}
	for _, tt := range tests {
		p, err := DecodePolicy([]byte(tt.in))
		if tt.wantErr == "" {
			if err != nil || p.Isolation != IsolationNone || !slices.Equal(p.EnvAllow, DefaultEnvAllow) {
				t.Errorf("DecodePolicy(%s) = %+v, %v; want success with defaults", tt.in, p, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("DecodePolicy(%s) = %v (exit %d); want exit 2 with %q", tt.in, err, exitcode.Of(err), tt.wantErr)
		}
	}
	// An explicit empty env_allow means no variables at all.
	p, err := DecodePolicy([]byte(`{` + policyHead + `"workspace":"/w","env_allow":[]}`))
	if err != nil || p.EnvAllow == nil || len(p.EnvAllow) != 0 {
		t.Errorf("env_allow [] decoded as %#v, %v; want an empty, non-nil list", p.EnvAllow, err)
	}
}

func TestLoadAndCheckPolicy(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadPolicy(filepath.Join(dir, "none.json")); exitcode.Of(err) != exitcode.NotFound {
		t.Errorf("LoadPolicy(missing) = %v; want exit 4", err)
	}
	path := filepath.Join(dir, "p.json")
	writeFile(t, path, `{`+policyHead+`"workspace":"`+filepath.Join(dir, "ws")+`"}`)
	p, err := LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Check() with a missing workspace = %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Check(); err != nil {
		t.Errorf("Check() = %v", err)
	}
}

func TestEffectiveLimits(t *testing.T) {
	d := func(s string) jsonx.Duration { v, _ := time.ParseDuration(s); return jsonx.Duration(v) }
	tests := []struct {
		name    string
		max     Limits
		task    Limits
		want    Limits
		wantErr string
	}{
		{"defaults", Limits{}, Limits{}, DefaultLimits, ""},
		{"default capped by a lower max", Limits{Timeout: d("1m"), OutputBytes: 4096}, Limits{},
			Limits{Timeout: d("1m"), KillAfter: d("5s"), Grace: d("2s"), OutputBytes: 4096, ContextBytes: 1 << 20}, ""},
		{"rlimit default is the policy's max", Limits{MemoryBytes: 1 << 30}, Limits{},
			Limits{Timeout: d("10m"), KillAfter: d("5s"), Grace: d("2s"), OutputBytes: 1 << 20, ContextBytes: 1 << 20, MemoryBytes: 1 << 30}, ""},
		{"task lowers", Limits{}, Limits{Timeout: d("3s"), CPUSeconds: 2},
			Limits{Timeout: d("3s"), KillAfter: d("5s"), Grace: d("2s"), OutputBytes: 1 << 20, ContextBytes: 1 << 20, CPUSeconds: 2}, ""},
		{"task above max", Limits{MemoryBytes: 1 << 20}, Limits{MemoryBytes: 1 << 21}, Limits{}, "task.limits.memory_bytes: 2097152 exceeds the policy maximum 1048576"},
		{"task above built-in ceiling", Limits{}, Limits{OutputBytes: 128 << 20}, Limits{}, "task.limits.output_bytes"},
		{"policy raises a ceiling", Limits{Timeout: d("48h")}, Limits{Timeout: d("30h")},
			Limits{Timeout: d("30h"), KillAfter: d("5s"), Grace: d("2s"), OutputBytes: 1 << 20, ContextBytes: 1 << 20}, ""},
	}
	for _, tt := range tests {
		p := &Policy{Max: tt.max}
		got, err := p.EffectiveLimits(&Task{Limits: tt.task})
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || exitcode.Of(err) != exitcode.Refused {
				t.Errorf("%s: EffectiveLimits = %v (exit %d); want 126 with %q", tt.name, err, exitcode.Of(err), tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: EffectiveLimits = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}

func TestNarrow(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	base := &Policy{Allow: []string{"go", "git"}, Workspace: ws, Isolation: IsolationLandlock, Max: Limits{Timeout: jsonx.Duration(time.Hour)}}
	base.Default()
	tests := []struct {
		name    string
		n       Narrowing
		check   func(*Policy) bool
		wantErr string
		field   string // the refused Narrowing field
	}{
		{"allow intersects", Narrowing{Allow: []string{"go"}}, func(p *Policy) bool { return slices.Equal(p.Allow, []string{"go"}) }, "", ""},
		{"allow cannot add", Narrowing{Allow: []string{"go", "curl"}}, nil, "allow curl: not allowed by the policy", "Allow"},
		{"workspace beneath", Narrowing{Workspace: filepath.Join(ws, "sub")}, func(p *Policy) bool { return strings.HasSuffix(p.Workspace, "/sub") }, "", ""},
		{"workspace outside", Narrowing{Workspace: t.TempDir()}, nil, "outside the policy workspace", "Workspace"},
		{"stronger isolation", Narrowing{Isolation: IsolationStrict}, func(p *Policy) bool { return p.Isolation == IsolationStrict }, "", ""},
		{"weaker isolation", Narrowing{Isolation: IsolationNone}, nil, "isolation none: would weaken", "Isolation"},
		{"best effort over a required backend", Narrowing{IsolationBestEffort: true}, nil, "isolation-best-effort: the policy requires landlock", "IsolationBestEffort"},
		{"lower max", Narrowing{Max: Limits{Timeout: jsonx.Duration(time.Minute)}}, func(p *Policy) bool { return p.Max.Timeout.D() == time.Minute }, "", ""},
		{"higher max ignored", Narrowing{Max: Limits{Timeout: jsonx.Duration(2 * time.Hour)}}, func(p *Policy) bool { return p.Max.Timeout.D() == time.Hour }, "", ""},
	}
	for _, tt := range tests {
		got, err := base.Narrow(tt.n)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || exitcode.Of(err) != exitcode.Refused {
				t.Errorf("%s: Narrow = %v; want 126 with %q", tt.name, err, tt.wantErr)
			}
			if fe := exitcode.AsField(err); fe == nil || fe.Field != tt.field || !errors.Is(err, ErrWidens) {
				t.Errorf("%s: Narrow = %#v; want a FieldError for %s that is ErrWidens", tt.name, err, tt.field)
			}
			continue
		}
		if err != nil || !tt.check(got) {
			t.Errorf("%s: Narrow = %+v, %v", tt.name, got, err)
		}
	}
	if !slices.Equal(base.Allow, []string{"go", "git"}) {
		t.Errorf("Narrow modified its receiver: allow %v", base.Allow)
	}
}

func TestErrorResult(t *testing.T) {
	_, err := Run(t.Context(), policyFor(t, IsolationNone, "go"), NewTask("rm"), Options{})
	r := ErrorResult(NewTask("rm", "-rf"), err)
	if r.Status != StatusRejected || r.ExitCode != exitcode.Refused || r.CLICode() != exitcode.Refused || r.Argc != 2 || !strings.Contains(r.Error, "rm") {
		t.Errorf("ErrorResult = %+v", r)
	}
	if r := ErrorResult(nil, errors.New("disk on fire")); r.Status != StatusError || r.CLICode() != exitcode.Internal {
		t.Errorf("ErrorResult(plain error) = %+v; want status error, 125", r)
	}
}
