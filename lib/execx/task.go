package execx

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/art-runtime/art/lib/jsonx"
)

// MaxTaskIDLen bounds Task.ID, which ends up in file names and log lines.
const MaxTaskIDLen = 200

// Default implements jsonx.Defaulter.
func (t *Task) Default() {
	if t.Dir == "" {
		t.Dir = "."
	}
}

// Validate implements jsonx.Validator: what is wrong with the task on its
// own (exit 2). Whether the policy lets it run — program allowlist, paths
// beneath the workspace, limits within ceilings, environment names — is
// decided at run time and refused with exit 126.
func (t *Task) Validate() error {
	if len(t.ID) > MaxTaskIDLen {
		return jsonx.Errorf("task.id", "longer than %d bytes", MaxTaskIDLen)
	}
	if strings.IndexFunc(t.ID, unicode.IsControl) >= 0 {
		return jsonx.Errorf("task.id", "contains a control character")
	}
	if t.Program == "" {
		return jsonx.Errorf("task.program", "required")
	}
	for i, a := range t.Args {
		if strings.ContainsRune(a, 0) {
			return jsonx.Errorf(fmt.Sprintf("task.args[%d]", i), "contains a NUL byte")
		}
	}
	if strings.ContainsRune(t.Dir, 0) {
		return jsonx.Errorf("task.dir", "contains a NUL byte")
	}
	for i, c := range t.Context {
		if c == "" || strings.ContainsRune(c, 0) {
			return jsonx.Errorf(fmt.Sprintf("task.context[%d]", i), "empty or contains a NUL byte")
		}
	}
	for i, name := range t.Env.Allow {
		if err := checkEnvName(name); err != nil {
			return jsonx.Errorf(fmt.Sprintf("task.env.allow[%d]", i), "%v", err)
		}
	}
	for _, name := range sortedKeys(t.Env.Set) {
		if err := checkEnvName(name); err != nil {
			return jsonx.Errorf("task.env.set", "%v", err)
		}
		if strings.ContainsRune(t.Env.Set[name], 0) {
			return jsonx.Errorf("task.env.set."+name, "value contains a NUL byte")
		}
	}
	return t.Limits.validate("task.limits")
}

// DecodeTask strictly decodes a Task manifest, applies defaults and
// validates it (exit 2 on any problem, naming the field path, e.g.
// "task.limits.timout: unknown field").
func DecodeTask(data []byte) (*Task, error) {
	var t Task
	if err := jsonx.Decode(data, "task", &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// NewTask returns a Task document for program and args with its header
// filled and defaults applied, for callers that build tasks in code.
func NewTask(program string, args ...string) *Task {
	t := &Task{TypeMeta: jsonx.Meta(KindTask), Program: program, Args: args}
	t.Default()
	return t
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
