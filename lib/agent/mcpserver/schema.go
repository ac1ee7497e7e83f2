package mcpserver

import (
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemaFor is the JSON Schema of T as the SDK would infer it, made
// portable: the SDK spells a Go pointer or slice as the type union
// ["null", T], which clients that map tool schemas onto a single-type
// dialect (OpenAPI's, Gemini's function declarations) reject or weaken,
// and which the MCP Inspector flags. Every such field here is omitted
// when empty (omitempty) or always set, never sent as null, so its type
// is T alone.
func schemaFor[T any]() *jsonschema.Schema {
	s, err := jsonschema.ForType(reflect.TypeFor[T](), &jsonschema.ForOptions{})
	if err != nil {
		panic("mcpserver: schema of " + reflect.TypeFor[T]().String() + ": " + err.Error()) // the types are this package's own
	}
	portable(s)
	return s
}

// portable rewrites, in place, every ["null", T] type union to T.
func portable(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		t := s.Types[0]
		if t == "null" {
			t = s.Types[1]
		}
		s.Type, s.Types = t, nil
	}
	for _, p := range s.Properties {
		portable(p)
	}
	for _, d := range s.Defs {
		portable(d)
	}
	for _, a := range s.AnyOf {
		portable(a)
	}
	portable(s.Items)
	portable(s.AdditionalProperties)
}
