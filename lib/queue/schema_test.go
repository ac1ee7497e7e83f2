package queue

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/art-runtime/art/internal/schematest"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/jsonx"
)

func strs[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// TestSchemaParity locks schemas/queue-event.schema.json and
// schemas/task-status.schema.json to the Go types.
func TestSchemaParity(t *testing.T) {
	ev := schematest.Load(t, "queue-event.schema.json")
	schematest.Fields(t, ev, "", reflect.TypeFor[EventDoc]())
	schematest.Const(t, ev, "/properties/kind", KindEvent)
	schematest.Const(t, ev, "/properties/apiVersion", jsonx.APIVersion)
	schematest.Enum(t, ev, "/properties/type", strs(EventTypes))
	schematest.Enum(t, ev, "/$defs/Trace/properties/status", strs(execx.Statuses))
	schematest.Enum(t, ev, "/$defs/Acceptance/properties/status", strs(execx.Statuses))
	schematest.Fields(t, ev, "/$defs/RunSpec", reflect.TypeFor[RunSpec]())
	schematest.Enum(t, ev, "/$defs/RunSpec/properties/workspace", strs(WorkspaceModes))

	ts := schematest.Load(t, "task-status.schema.json")
	schematest.Fields(t, ts, "", reflect.TypeFor[TaskStatus]())
	schematest.Const(t, ts, "/properties/kind", KindTaskStatus)
	schematest.Enum(t, ts, "/properties/state", strs(States))
	schematest.Enum(t, ts, "/$defs/LastRun/properties/status", strs(execx.Statuses))
	schematest.Enum(t, ts, "/$defs/AcceptanceRun/properties/status", strs(execx.Statuses))
	schematest.Fields(t, ts, "/$defs/QueueSummary", reflect.TypeFor[Summary]())
	schematest.Const(t, ts, "/$defs/QueueSummary/properties/kind", KindSummary)
	schematest.Fields(t, ts, "/$defs/QueueCheck", reflect.TypeFor[CheckReport]())
	schematest.Const(t, ts, "/$defs/QueueCheck/properties/kind", KindCheck)
}

// TestDocumentsValidate: what artq prints validates against its schemas.
func TestDocumentsValidate(t *testing.T) {
	evSchema := schematest.Compile(t, "queue-event.schema.json")
	for _, e := range sampleEvents() {
		if e.Type == EventEnqueued {
			e.Manifest = []byte(`{"apiVersion":"art/v1alpha1","kind":"Task","id":"t1","program":"echo","args":["hi"],"dir":"."}`)
		}
		schematest.Validate(t, evSchema, string(e.Type), AppendEventDoc(nil, e))
	}
	bad := AppendEventDoc(nil, &Event{Seq: 1, Time: t0, Type: EventStarted, Task: "t1"})
	if err := evSchema.Validate(mustJSON(t, bad)); err == nil {
		t.Error("a started event without attempt and worker validates")
	}

	s := NewState()
	for _, e := range []*Event{ev(EventEnqueued, "a", 0), ev(EventStarted, "a", 1), traced("a", 1, execx.StatusFailed), ev(EventFailed, "a", 1), ev(EventEnqueued, "b", 0), ev(EventStarted, "b", 1), ev(EventCancelRequested, "b", 1)} {
		e.Seq = s.Seq + 1
		if err := s.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	tsSchema := schematest.Compile(t, "task-status.schema.json")
	for _, id := range []string{"a", "b"} {
		st := StatusOf(s.Task(id))
		data, _ := jsonx.Marshal(&st)
		schematest.Validate(t, tsSchema, "TaskStatus "+id, data)
	}
	sum := SummaryOf(s)
	data, _ := jsonx.Marshal(&sum)
	validateDef(t, "QueueSummary", data)
	rep := &CheckReport{TypeMeta: jsonx.Meta(KindCheck), OK: true, LogCheck: LogCheck{Location: "/q", FirstSeq: 1, LastSeq: 7, Events: 7, Bytes: 900, TornTail: &TornTail{Offset: 900, Bytes: 12}, Notes: []string{"x"}}, Tasks: 2}
	data, _ = jsonx.Marshal(rep)
	validateDef(t, "QueueCheck", data)
}

func mustJSON(t *testing.T, data []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// validateDef validates data against a document defined in
// task-status.schema.json's $defs.
func validateDef(t *testing.T, def string, data []byte) {
	t.Helper()
	s := schematest.Compile(t, "task-status.schema.json#/$defs/"+def)
	schematest.Validate(t, s, def, data)
}
