package execx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// DefaultLimits are what a task gets for a limit it leaves at zero, before
// the policy's ceiling is applied (the effective default is min(default,
// max)). Zero rlimits mean "not set": the child inherits the runner's.
var DefaultLimits = Limits{
	Timeout:      jsonx.Duration(10 * time.Minute),
	KillAfter:    jsonx.Duration(5 * time.Second),
	Grace:        jsonx.Duration(2 * time.Second),
	OutputBytes:  1 << 20,
	ContextBytes: 1 << 20,
}

// BuiltinMax are the ceilings a policy gets for a Max field it leaves at
// zero. Zero rlimit ceilings mean "no ceiling".
var BuiltinMax = Limits{
	Timeout:      jsonx.Duration(24 * time.Hour),
	KillAfter:    jsonx.Duration(time.Minute),
	Grace:        jsonx.Duration(time.Minute),
	OutputBytes:  64 << 20,
	ContextBytes: 64 << 20,
}

// HardMaxOutputBytes bounds output_bytes even in a policy: the captured
// output lives in memory and in the Result document.
const HardMaxOutputBytes = 1 << 30

// limitField describes one field of Limits so the default/ceiling/refusal
// logic is written once for all ten.
type limitField struct {
	name string
	ptr  func(*Limits) *int64
	dur  bool
}

var limitFields = []limitField{
	{"timeout", func(l *Limits) *int64 { return (*int64)(&l.Timeout) }, true},
	{"kill_after", func(l *Limits) *int64 { return (*int64)(&l.KillAfter) }, true},
	{"grace", func(l *Limits) *int64 { return (*int64)(&l.Grace) }, true},
	{"output_bytes", func(l *Limits) *int64 { return &l.OutputBytes }, false},
	{"context_bytes", func(l *Limits) *int64 { return &l.ContextBytes }, false},
	{"cpu_seconds", func(l *Limits) *int64 { return &l.CPUSeconds }, false},
	{"memory_bytes", func(l *Limits) *int64 { return &l.MemoryBytes }, false},
	{"processes", func(l *Limits) *int64 { return &l.Processes }, false},
	{"file_bytes", func(l *Limits) *int64 { return &l.FileBytes }, false},
	{"open_files", func(l *Limits) *int64 { return &l.OpenFiles }, false},
}

func (f limitField) format(v int64) string {
	if f.dur {
		return time.Duration(v).String()
	}
	return fmt.Sprint(v)
}

func (l *Limits) validate(path string) error {
	for _, f := range limitFields {
		if v := *f.ptr(l); v < 0 {
			return jsonx.Errorf(path+"."+f.name, "must not be negative, got %d", v)
		}
	}
	if l.OutputBytes > HardMaxOutputBytes {
		return jsonx.Errorf(path+".output_bytes", "%d exceeds the hard maximum %d", l.OutputBytes, HardMaxOutputBytes)
	}
	return nil
}

// MaxLimits returns the policy's effective ceilings: each Max field, or
// the built-in ceiling where it is zero.
func (p *Policy) MaxLimits() Limits {
	m := p.Max
	for _, f := range limitFields {
		if *f.ptr(&m) == 0 {
			*f.ptr(&m) = *f.ptr(&BuiltinMax)
		}
	}
	return m
}

// EffectiveLimits returns the limits task t runs with under p: each field
// the task set, or min(default, ceiling). A task asking for more than a
// ceiling is refused (exit 126) with the field named: a task can never
// widen its policy.
func (p *Policy) EffectiveLimits(t *Task) (Limits, error) {
	max := p.MaxLimits()
	var out Limits
	for _, f := range limitFields {
		want, ceil, def := *f.ptr(&t.Limits), *f.ptr(&max), *f.ptr(&DefaultLimits)
		switch {
		case want != 0 && ceil != 0 && want > ceil:
			return Limits{}, exitcode.Wrap(exitcode.Refused, &jsonx.FieldError{
				Path: "task.limits." + f.name,
				Msg:  fmt.Sprintf("%s exceeds the policy maximum %s", f.format(want), f.format(ceil)),
			})
		case want != 0:
			*f.ptr(&out) = want
		case def == 0 || (ceil != 0 && ceil < def):
			*f.ptr(&out) = ceil
		default:
			*f.ptr(&out) = def
		}
	}
	return out, nil
}

// Default implements jsonx.Defaulter. The search path is left empty here
// and resolved at run time from the runner's PATH (SearchPath), so a
// policy document means the same thing wherever it is checked.
func (p *Policy) Default() {
	if p.Isolation == "" {
		p.Isolation = IsolationNone
	}
	if p.EnvAllow == nil {
		p.EnvAllow = slices.Clone(DefaultEnvAllow)
	}
	if p.Allow == nil {
		p.Allow = []string{}
	}
}

// Validate implements jsonx.Validator: the document's own consistency. It
// does not touch the filesystem (see Check).
func (p *Policy) Validate() error {
	if p.Workspace == "" {
		return jsonx.Errorf("policy.workspace", "required")
	}
	if !filepath.IsAbs(p.Workspace) {
		return jsonx.Errorf("policy.workspace", "%q is not an absolute path", p.Workspace)
	}
	if strings.ContainsRune(p.Workspace, 0) {
		return jsonx.Errorf("policy.workspace", "contains a NUL byte")
	}
	for i, name := range p.Allow {
		if err := checkProgramName(name); err != nil {
			return jsonx.Errorf(fmt.Sprintf("policy.allow[%d]", i), "%v", err)
		}
	}
	for i, dir := range p.Path {
		if !filepath.IsAbs(dir) || strings.ContainsRune(dir, 0) {
			return jsonx.Errorf(fmt.Sprintf("policy.path[%d]", i), "%q is not an absolute directory", dir)
		}
	}
	for i, name := range p.EnvAllow {
		if err := checkEnvName(name); err != nil {
			return jsonx.Errorf(fmt.Sprintf("policy.env_allow[%d]", i), "%v", err)
		}
	}
	if !slices.Contains(Isolations, p.Isolation) {
		return jsonx.Errorf("policy.isolation", "unknown backend %q (want one of %s)", p.Isolation, isolationList())
	}
	for i, name := range p.KeepCapabilities {
		if _, ok := stage.CapNumber(name); !ok {
			return jsonx.Errorf(fmt.Sprintf("policy.keep_capabilities[%d]", i), "unknown capability %q", name)
		}
	}
	for i, kind := range p.WorkspaceNodes {
		if !slices.Contains(workspaceNodeKinds, kind) {
			return jsonx.Errorf(fmt.Sprintf("policy.workspace_nodes[%d]", i), "unknown kind %q (want fifo, sock, char or block)", kind)
		}
	}
	if err := p.Network.validate(); err != nil {
		return err
	}
	return p.Max.validate("policy.max")
}

// Check validates p and then what the document refers to on this machine:
// the workspace must exist and be a directory. check-policy and Run both
// use it.
func (p *Policy) Check() error {
	if err := p.Validate(); err != nil {
		return err
	}
	st, err := os.Stat(p.Workspace)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return jsonx.Errorf("policy.workspace", "%s does not exist", p.Workspace)
		}
		return exitcode.Field(exitcode.Internal, "policy.workspace", "", "%w", err)
	}
	if !st.IsDir() {
		return jsonx.Errorf("policy.workspace", "%s is not a directory", p.Workspace)
	}
	return nil
}

// SearchPath is where programs are looked up: the policy's path, or the
// absolute entries of the runner's PATH (relative entries such as "." are
// dropped: they would make the allowlist depend on the working directory).
func (p *Policy) SearchPath() []string {
	if p.Path != nil {
		return p.Path
	}
	var out []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if filepath.IsAbs(dir) && !slices.Contains(out, dir) {
			out = append(out, dir)
		}
	}
	return out
}

// DecodePolicy strictly decodes a Policy document, applies defaults and
// validates it (exit 2 on any problem, naming the field).
func DecodePolicy(data []byte) (*Policy, error) {
	var p Policy
	if err := jsonx.Decode(data, "policy", &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// LoadPolicy reads and decodes the policy file at path.
func LoadPolicy(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, exitcode.Fieldf(exitcode.NotFound, "Policy", path, "policy %s: no such file", path).Because(fs.ErrNotExist)
		}
		return nil, exitcode.Fieldf(exitcode.Internal, "Policy", path, "policy: %w", err)
	}
	p, err := DecodePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Narrowing is what a caller may add on top of an operator's policy (the
// CLI's policy flags given together with --policy). Every field can only
// narrow: see Policy.Narrow.
type Narrowing struct {
	// Allow, if non-nil, intersects the allowlist; a name the policy does
	// not allow is refused rather than silently dropped.
	Allow []string
	// Workspace, if set, must be the policy's workspace or a directory
	// beneath it.
	Workspace string
	// Isolation, if set, may only be stronger: none < landlock < strict.
	Isolation Isolation
	// IsolationBestEffort is accepted only when the policy already allows
	// best effort or requires no isolation at all.
	IsolationBestEffort bool
	// Max limits, if set, lower the policy's ceilings.
	Max Limits
	// Network, if set, may only be narrower: host > allow > loopback >
	// none. A stronger Isolation never brings a wider network default.
	Network NetworkMode
	// AllowHosts, if non-nil, replaces the destinations of network allow;
	// each must be covered by the policy's network.allow.
	AllowHosts []string
}

// Narrow returns a copy of p restricted by n, or a refusal (exit 126,
// errors.Is ErrWidens) naming the field of n that would have widened it
// (an *exitcode.FieldError with Field "Allow", "Workspace", "Isolation",
// "IsolationBestEffort", "Network" or "AllowHost").
func (p *Policy) Narrow(n Narrowing) (*Policy, error) {
	q := *p
	q.Allow = slices.Clone(p.Allow)
	q.Path = slices.Clone(p.Path)
	q.EnvAllow = slices.Clone(p.EnvAllow)
	q.KeepCapabilities = slices.Clone(p.KeepCapabilities)
	q.WorkspaceNodes = slices.Clone(p.WorkspaceNodes)
	q.Network.Allow = slices.Clone(p.Network.Allow)
	if n.Allow != nil {
		var allow []string
		for _, name := range n.Allow {
			if !slices.Contains(p.Allow, name) {
				return nil, exitcode.Field(exitcode.Refused, "Allow", name, "not allowed by the policy").Because(ErrWidens)
			}
			allow = append(allow, name)
		}
		q.Allow = allow
	}
	if n.Workspace != "" {
		ws, err := filepath.Abs(n.Workspace)
		if err != nil {
			return nil, exitcode.Field(exitcode.Usage, "Workspace", "", "%w", err)
		}
		realWS, err1 := filepath.EvalSymlinks(ws)
		realPol, err2 := filepath.EvalSymlinks(p.Workspace)
		if err1 != nil || err2 != nil {
			return nil, exitcode.Field(exitcode.Usage, "Workspace", ws, "%w", errors.Join(err1, err2))
		}
		if !within(realPol, realWS) {
			return nil, exitcode.Field(exitcode.Refused, "Workspace", ws, "outside the policy workspace %s", p.Workspace).Because(ErrWidens)
		}
		q.Workspace = realWS
	}
	if n.Isolation != "" && n.Isolation != p.Isolation {
		if !stronger(n.Isolation, p.Isolation) {
			return nil, exitcode.Field(exitcode.Refused, "Isolation", string(n.Isolation), "would weaken the policy's isolation %s", p.Isolation).Because(ErrWidens)
		}
		q.Isolation = n.Isolation
	}
	if n.IsolationBestEffort && !p.IsolationBestEffort {
		if p.Isolation != IsolationNone {
			return nil, exitcode.Field(exitcode.Refused, "IsolationBestEffort", "", "the policy requires %s isolation", p.Isolation).Because(ErrWidens)
		}
		q.IsolationBestEffort = true
	}
	if n.Network != "" || n.AllowHosts != nil || n.Isolation != "" {
		if err := narrowNetwork(p, &q, n.Network, n.AllowHosts); err != nil {
			return nil, err
		}
	}
	for _, f := range limitFields {
		v := *f.ptr(&n.Max)
		if v == 0 {
			continue
		}
		if cur := *f.ptr(&q.Max); cur == 0 || v < cur {
			if ceil := *f.ptr(&BuiltinMax); cur == 0 && ceil != 0 && v > ceil {
				v = ceil
			}
			*f.ptr(&q.Max) = v
		}
	}
	return &q, nil
}

// stronger reports whether isolation a is strictly stronger than b. seatbelt
// is comparable only with none: it is a different mechanism, not a level.
func stronger(a, b Isolation) bool {
	switch b {
	case IsolationNone:
		return a != IsolationNone
	case IsolationLandlock:
		return a == IsolationStrict
	}
	return false
}

// workspaceNodeKinds are the values Policy.WorkspaceNodes accepts.
var workspaceNodeKinds = []string{stage.NodeFIFO, stage.NodeSock, stage.NodeChar, stage.NodeBlock}

func within(root, p string) bool {
	root = filepath.Clean(root)
	p = filepath.Clean(p)
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

func isolationList() string {
	var s []string
	for _, i := range Isolations {
		s = append(s, string(i))
	}
	return strings.Join(s, ", ")
}

// checkProgramName accepts only a bare file name.
func checkProgramName(name string) error {
	switch {
	case name == "":
		return errors.New("empty program name")
	case strings.ContainsRune(name, 0):
		return errors.New("program name contains a NUL byte")
	case strings.ContainsRune(name, '/'):
		return fmt.Errorf("%q is not a bare program name (no / allowed)", name)
	case name == "." || name == "..":
		return fmt.Errorf("%q is not a program name", name)
	}
	return nil
}

// checkEnvName accepts what execve can carry as a name: non-empty, no '='
// and no NUL.
func checkEnvName(name string) error {
	switch {
	case name == "":
		return errors.New("empty variable name")
	case strings.ContainsAny(name, "=\x00"):
		return fmt.Errorf("%q is not a valid variable name", name)
	}
	return nil
}
