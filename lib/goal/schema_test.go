package goal

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/art-runtime/art/internal/schematest"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/queue"
)

var update = flag.Bool("update", false, "rewrite testdata/goal/valid from the library")

const (
	goalSchema    = "goal.schema.json"
	closureSchema = "goal-closure.schema.json"
)

// TestSchemaParity locks schemas/goal*.schema.json to the Go types: fields,
// version, kinds, phases (in order), evidence types and their field shapes,
// task states, debt kinds, severities, the id rule and the license.
func TestSchemaParity(t *testing.T) {
	g := schematest.Load(t, goalSchema)
	c := schematest.Load(t, closureSchema)
	schematest.Compile(t, goalSchema)
	schematest.Compile(t, closureSchema)

	schematest.Fields(t, g, "", reflect.TypeFor[Journal]())
	schematest.Fields(t, c, "", reflect.TypeFor[ClosureDocument]())
	schematest.Fields(t, g, "/$defs/Evidence", reflect.TypeFor[Evidence]())
	schematest.Fields(t, g, "/$defs/Closure", reflect.TypeFor[Closure]())
	schematest.Fields(t, g, "/$defs/QueueCheck", reflect.TypeFor[QueueCheck]())
	schematest.Fields(t, g, "/$defs/SinkCheck", reflect.TypeFor[SinkCheck]())

	schematest.Const(t, g, "/properties/apiVersion", jsonx.APIVersion)
	schematest.Const(t, g, "/properties/kind", Kind)
	schematest.Const(t, c, "/properties/apiVersion", jsonx.APIVersion)
	schematest.Const(t, c, "/properties/kind", KindClosure)
	for name, s := range map[string]map[string]any{goalSchema: g, closureSchema: c} {
		if got, _ := s["x-license"].(string); got != License {
			t.Errorf("schemas/%s x-license = %q; Go has %q", name, got, License)
		}
	}

	// Phases are ordered: the schema lists them in the canonical order.
	var phases []string
	for _, v := range schematest.Node(t, g, "/$defs/Phase")["enum"].([]any) {
		phases = append(phases, v.(string))
	}
	if want := strs(Phases); !slices.Equal(phases, want) {
		t.Errorf("schema phases %v; Go has %v (order matters)", phases, want)
	}
	schematest.Enum(t, g, "/$defs/EvidenceType", strs(EvidenceTypes))
	schematest.Enum(t, g, "/$defs/TaskState", strs(TaskStates))
	schematest.Enum(t, g, "/$defs/DebtKind", strs(DebtKinds))
	schematest.Enum(t, g, "/$defs/Severity", strs(Severities))

	// Evidence shapes: the schema's per-type if/then requires exactly the
	// Go-required fields and forbids every typed field the type does not use.
	typed := map[string]bool{}
	for _, sh := range EvidenceShapes {
		for _, f := range append(slices.Clone(sh.Required), sh.Optional...) {
			typed[f] = true
		}
	}
	var goTyped []string
	for name := range jsonFields(reflect.TypeFor[Evidence]()) {
		if name != "type" && name != "note" && name != "recorded_at" {
			goTyped = append(goTyped, name)
		}
	}
	if got := keys(typed); !slices.Equal(got, sorted(goTyped)) {
		t.Errorf("EvidenceShapes cover %v; Evidence's typed fields are %v", got, sorted(goTyped))
	}
	rules := schematest.Node(t, g, "/$defs/Evidence")["allOf"].([]any)
	seen := map[EvidenceType]bool{}
	for _, r := range rules {
		rule := r.(map[string]any)
		typ := EvidenceType(rule["if"].(map[string]any)["properties"].(map[string]any)["type"].(map[string]any)["const"].(string))
		then := rule["then"].(map[string]any)
		seen[typ] = true
		sh, ok := EvidenceShapes[typ]
		if !ok {
			t.Errorf("schema has a rule for evidence type %q that Go does not know", typ)
			continue
		}
		var req []string
		for _, f := range then["required"].([]any) {
			req = append(req, f.(string))
		}
		if !slices.Equal(sorted(req), sorted(sh.Required)) {
			t.Errorf("schema %s evidence requires %v; Go requires %v", typ, req, sh.Required)
		}
		var forbidden []string
		for f := range then["properties"].(map[string]any) {
			forbidden = append(forbidden, f)
		}
		var want []string
		for f := range typed {
			if !slices.Contains(sh.Required, f) && !slices.Contains(sh.Optional, f) {
				want = append(want, f)
			}
		}
		if !slices.Equal(sorted(forbidden), sorted(want)) {
			t.Errorf("schema %s evidence forbids %v; Go forbids %v", typ, sorted(forbidden), sorted(want))
		}
	}
	for _, typ := range EvidenceTypes {
		if !seen[typ] {
			t.Errorf("schema has no field rule for evidence type %q", typ)
		}
	}

	// The id rule: the schema's pattern and idProblem agree.
	pat := regexp.MustCompile(schematest.Node(t, g, "/$defs/ID")["pattern"].(string))
	for _, id := range []string{"g", "0", "a.b-c_d", strings.Repeat("x", 128), strings.Repeat("x", 129), "", ".", "..", ".a", "-a", "a/b", "a b", "a\n", "é", "a:b"} {
		if got, want := pat.MatchString(id), idProblem(id) == ""; got != want {
			t.Errorf("id %q: schema pattern says %v, Go says %v", id, got, want)
		}
	}
	// The task id rule: the schema's, Go's and the queue's agree.
	tpat := regexp.MustCompile(schematest.Node(t, g, "/$defs/TaskID")["pattern"].(string))
	for _, id := range []string{"t1", "0", "a-b_c", "a.b", strings.Repeat("x", 128), strings.Repeat("x", 129), "", ".", "-a", "_a", "a/b", "a b", "é", "a:b"} {
		s, g, q := tpat.MatchString(id), taskIDProblem(id) == "", queue.ValidName("task", id) == nil
		if s != g || g != q {
			t.Errorf("task id %q: schema pattern says %v, Go says %v, the queue says %v", id, s, g, q)
		}
	}
}

// TestFixtures: every journal the library writes validates against the
// schema; the fixtures in testdata/goal/valid are what the library writes
// (regenerate with -update); every fixture in testdata/goal/invalid is
// refused by the Go decoder with exit 2, naming the path in its _want file.
func TestFixtures(t *testing.T) {
	gs := schematest.Compile(t, goalSchema)
	cs := schematest.Compile(t, closureSchema)
	s, _ := testStore(t)
	journals := map[string]*Journal{
		"genesis.json": stage(t, s, "genesis", 0, false),
		"build.json":   stage(t, s, "build", 4, false),
		"sealed.json":  stage(t, s, "sealed", 8, false),
		"closed.json":  stage(t, s, "closed", 8, true),
	}
	for name, j := range journals {
		data, err := j.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		schematest.Validate(t, gs, name, data)
		path := fixture(filepath.Join("valid", name))
		if *update {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if disk := readBytes(t, path); string(disk) != string(data) {
			t.Errorf("%s is not what the library writes; run go test ./lib/goal -run TestFixtures -update", path)
		}
	}
	cdata, _ := jsonx.MarshalIndent(sampleClosure())
	schematest.Validate(t, cs, "closure.json", cdata)
	if *update {
		if err := os.WriteFile(fixture("valid/closure.json"), cdata, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	valid, _ := filepath.Glob(fixture("valid/*.json"))
	if len(valid) < 5 {
		t.Fatalf("only %d valid fixtures", len(valid))
	}
	for _, path := range valid {
		data := readBytes(t, path)
		if strings.HasSuffix(path, "closure.json") {
			if _, err := DecodeClosure(data); err != nil {
				t.Errorf("%s: %v", path, err)
			}
			schematest.Validate(t, cs, path, data)
			continue
		}
		if _, err := DecodeJournal(data); err != nil {
			t.Errorf("%s: %v", path, err)
		}
		schematest.Validate(t, gs, path, data)
	}

	invalid, _ := filepath.Glob(fixture("invalid/*.json"))
	if len(invalid) == 0 {
		t.Fatal("no invalid fixtures")
	}
	for _, path := range invalid {
		data := readBytes(t, path)
		want := strings.TrimSpace(string(readBytes(t, strings.TrimSuffix(path, ".json")+".want")))
		var err error
		if strings.HasPrefix(filepath.Base(path), "closure") {
			_, err = DecodeClosure(data)
		} else {
			_, err = DecodeJournal(data)
		}
		if err == nil || !strings.Contains(err.Error(), want) || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: decode = %v; want exit 2 mentioning %q", path, err, want)
		}
	}
}

func strs[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

func sorted(xs []string) []string {
	xs = slices.Clone(xs)
	sort.Strings(xs)
	return xs
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return sorted(out)
}

func jsonFields(t reflect.Type) map[string]bool {
	m := map[string]bool{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[name] = true
	}
	return m
}

// TestSchemaVerifiedEvidence: the schema and the decoder agree on the
// records of verified evidence: a from_queue only with a finished state,
// each record only on its own type, absolute paths.
func TestSchemaVerifiedEvidence(t *testing.T) {
	gs := schematest.Compile(t, goalSchema)
	base := string(readBytes(t, fixture("valid/sealed.json")))
	for _, tt := range []struct{ name, old, new string }{
		{"running with from_queue", `"state": "failed",`, `"state": "running",`},
		{"relative queue dir", `"dir": "/home/ana/.local/state/art/queues/default"`, `"dir": "queues/default"`},
		{"zero seq", `"seq": 12,`, `"seq": 0,`},
		{"from_queue on event evidence", `"event": "sha256:dddd`, `"from_queue": {"dir": "/q", "seq": 1, "attempts": 0, "updated_at": "2026-01-02T03:03:05.6Z"}, "event": "sha256:dddd`},
		{"unknown field in from_sink", `"line": 7,`, `"line": 7, "offset": 9,`},
		{"control character in subject", `"subject": "task/t-43"`, `"subject": "task/\u0007"`},
	} {
		if !strings.Contains(base, tt.old) {
			t.Fatalf("%s: the fixture has no %q", tt.name, tt.old)
		}
		data := []byte(strings.Replace(base, tt.old, tt.new, 1))
		_, err := DecodeJournal(data)
		if exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: decoder: %v; want exit 2", tt.name, err)
		}
		doc, jerr := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if jerr != nil {
			t.Fatal(jerr)
		}
		if gs.Validate(doc) == nil {
			t.Errorf("%s: the schema accepts what the decoder refuses (%v)", tt.name, err)
		}
	}
}
