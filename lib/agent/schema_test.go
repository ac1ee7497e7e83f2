package agent_test

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/art-runtime/art/internal/schematest"
	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/jsonx"
	ws "github.com/art-runtime/art/lib/workspace"
)

const eventSchema = "agent-event.schema.json"

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// The AgentEvent schema is a projection of the Go type: fields, enums and
// constants must agree.
func TestEventSchemaParity(t *testing.T) {
	s := schematest.Load(t, eventSchema)
	schematest.Compile(t, eventSchema)
	schematest.Fields(t, s, "", reflect.TypeFor[agent.Event]())
	schematest.Fields(t, s, "/$defs/Usage", reflect.TypeFor[provider.Usage]())
	schematest.Fields(t, s, "/$defs/Edit", reflect.TypeFor[ws.Edit]())
	schematest.Enum(t, s, "/properties/type", strs(agent.EventTypes))
	schematest.Enum(t, s, "/properties/refusal", strs(agent.Refusals))
	schematest.Enum(t, s, "/properties/status", strs(agent.Statuses))
	schematest.Enum(t, s, "/properties/action", strs(provider.Actions))
	schematest.Const(t, s, "/properties/apiVersion", jsonx.APIVersion)
	schematest.Const(t, s, "/properties/kind", agent.KindEvent)
}

var (
	compiledOnce sync.Once
	compiled     *jsonschema.Schema
)

// validateEvent checks one emitted event line against the schema: every
// run in these tests is also a schema test.
func validateEvent(t *testing.T, line []byte) {
	t.Helper()
	compiledOnce.Do(func() { compiled = schematest.Compile(t, eventSchema) })
	schematest.Validate(t, compiled, "event "+string(line), line)
}

// validateTranscript checks every record of a transcript written by the
// loop against the TranscriptRecord schema.
func validateTranscript(t *testing.T, path string) {
	t.Helper()
	s := schematest.Compile(t, "transcript-record.schema.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		schematest.Validate(t, s, fmt.Sprintf("%s line %d", path, i+1), line)
	}
}
