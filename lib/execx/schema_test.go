package execx

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/art-runtime/art/internal/schematest"
	"github.com/art-runtime/art/lib/jsonx"
)

const (
	policySchema = "policy.schema.json"
	taskSchema   = "task.schema.json"
	resultSchema = "result.schema.json"
)

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// The schemas are projections of the Go types: every field, enum and
// constant must agree, or this fails.
func TestSchemaParity(t *testing.T) {
	pol, task, res := schematest.Load(t, policySchema), schematest.Load(t, taskSchema), schematest.Load(t, resultSchema)
	for _, name := range []string{policySchema, taskSchema, resultSchema} {
		schematest.Compile(t, name)
	}
	schematest.Fields(t, pol, "", reflect.TypeFor[Policy]())
	schematest.Fields(t, task, "", reflect.TypeFor[Task]())
	schematest.Fields(t, task, "/$defs/Limits", reflect.TypeFor[Limits]())
	schematest.Fields(t, res, "", reflect.TypeFor[Result]())

	schematest.Enum(t, pol, "/properties/isolation", strs(Isolations))
	schematest.Enum(t, res, "/properties/isolation/properties/backend", strs(Isolations))
	schematest.Enum(t, res, "/properties/status", strs(Statuses))
	for _, s := range []struct {
		root map[string]any
		kind string
	}{{pol, KindPolicy}, {task, KindTask}, {res, KindResult}} {
		schematest.Const(t, s.root, "/properties/apiVersion", jsonx.APIVersion)
		schematest.Const(t, s.root, "/properties/kind", s.kind)
	}
	if ref, _ := schematest.Node(t, pol, "/properties/max")["$ref"].(string); ref != "task.schema.json#/$defs/Limits" {
		t.Errorf("policy max refers to %q; want the Task schema's Limits", ref)
	}
}

func fixtureDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "execx")
}

// Every fixture validates against its schema and decodes strictly with
// the Go decoder, so the two agree on real documents.
func TestFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(fixtureDir(), "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in %s: %v", fixtureDir(), err)
	}
	schemas := map[string]string{"policy": policySchema, "task": taskSchema, "result": resultSchema}
	for _, f := range files {
		base := filepath.Base(f)
		kind, _, _ := strings.Cut(strings.TrimSuffix(base, ".json"), "-")
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		schematest.Validate(t, schematest.Compile(t, schemas[kind]), base, data)
		switch kind {
		case "policy":
			_, err = DecodePolicy(data)
		case "task":
			_, err = DecodeTask(data)
		case "result":
			var r Result
			if err = jsonx.Unmarshal(data, "result", &r); err == nil {
				checkOutputCounts(t, base, &r)
			}
		default:
			t.Errorf("fixture %s: unknown kind %q", base, kind)
		}
		if err != nil {
			t.Errorf("fixture %s: %v", base, err)
		}
	}
}

// checkOutputCounts holds a Result's output fields to what the runner
// writes: output_omitted is present exactly when output_truncated, the
// marker in output names the same count, and what is kept plus what was
// omitted is every byte counted. The schema cannot say this; a fixture
// that breaks it would teach a reader the wrong arithmetic.
func checkOutputCounts(t *testing.T, name string, r *Result) {
	t.Helper()
	if r.OutputTruncated != (r.OutputOmitted > 0) {
		t.Errorf("%s: output_truncated %v with output_omitted %d; want omitted > 0 exactly when truncated", name, r.OutputTruncated, r.OutputOmitted)
	}
	kept := int64(len(r.Output))
	if m := omitted(r.OutputOmitted, true); r.OutputTruncated && strings.Contains(r.Output, m) {
		kept -= int64(len(m)) // the marker is not a byte of the stream
		if i := strings.Index(r.Output, m); i > 0 && r.Output[i-1] == '\n' && kept+r.OutputOmitted == r.OutputBytes+1 {
			kept-- // nor is the newline that puts it on a line of its own after a head cut mid-line
		}
	}
	if kept+r.OutputOmitted != r.OutputBytes {
		t.Errorf("%s: %d bytes kept + %d omitted != output_bytes %d", name, kept, r.OutputOmitted, r.OutputBytes)
	}
}

// Results the runner really produces validate, whatever happened.
func TestLiveResultsValidate(t *testing.T) {
	s := schematest.Compile(t, resultSchema)
	p := policyFor(t, IsolationNone, "sh")
	timeout := sh("sleep 10")
	timeout.Limits.Timeout = jsonx.Duration(1e8)
	capped := sh("seq 1 10000")
	capped.Limits.OutputBytes = 100
	for _, task := range []*Task{sh("echo ok"), sh("exit 7"), sh("kill -9 $$"), timeout, capped} {
		b, err := jsonx.Marshal(mustRun(t, p, task, Options{}))
		if err != nil {
			t.Fatal(err)
		}
		schematest.Validate(t, s, "Result of "+strings.Join(task.Args, " "), b)
	}
	_, err := Run(t.Context(), p, NewTask("rm"), Options{})
	b, _ := jsonx.Marshal(ErrorResult(NewTask("rm"), err))
	schematest.Validate(t, s, "ErrorResult", b)
}
