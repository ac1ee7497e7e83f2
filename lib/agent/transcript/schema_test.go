package transcript

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/art-runtime/art/internal/schematest"
	"github.com/art-runtime/art/lib/jsonx"
)

const recordSchema = "transcript-record.schema.json"

func TestRecordSchemaParity(t *testing.T) {
	s := schematest.Load(t, recordSchema)
	schematest.Compile(t, recordSchema)
	schematest.Fields(t, s, "", reflect.TypeFor[Record]())
	schematest.Fields(t, s, "/$defs/Run", reflect.TypeFor[Run]())
	schematest.Fields(t, s, "/$defs/State", reflect.TypeFor[State]())
	schematest.Enum(t, s, "/properties/type", Types)
	schematest.Const(t, s, "/properties/apiVersion", jsonx.APIVersion)
	schematest.Const(t, s, "/properties/kind", Kind)
}

// Records as written validate against the schema.
func TestRecordsValidate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run.jsonl")
	w, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	start := New(TypeStart)
	start.Run = &Run{Task: "t", Workspace: "/w", Allow: []string{}, Verify: []string{"true"}, Provider: "mock"}
	reply, obs := `{"action":"verify"}`, "ok"
	intent := New(TypeIntent)
	intent.Step, intent.RequestHash, intent.Reply, intent.Decision = 1, "sha256:"+string(make64()), &reply, []byte(reply)
	step := New(TypeStep)
	step.Step, step.RequestHash, step.Reply, step.Decision, step.Outcome, step.Observation, step.State = 1, intent.RequestHash, &reply, []byte(reply), "verify", &obs, &State{}
	end := New(TypeEnd)
	end.Status = "finished"
	s := schematest.Compile(t, recordSchema)
	for _, r := range []*Record{start, intent, step, end} {
		b, err := jsonx.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		schematest.Validate(t, s, r.Type+" record", b)
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
}

func make64() []byte {
	b := make([]byte, 64)
	for i := range b {
		b[i] = 'a'
	}
	return b
}
