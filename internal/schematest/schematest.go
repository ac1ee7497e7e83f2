// Package schematest locks the JSON Schemas in schemas/ to the Go types they
// describe. A parity test fails when a field, an enum value or a constant is
// added on one side and not the other, so the distributable schema can never
// drift from the code that decodes the document.
package schematest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Dir is the absolute path of the repository's schemas/ directory.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "schemas")
}

// Path is the absolute path of a file in schemas/.
func Path(name string) string { return filepath.Join(Dir(), name) }

// Compile compiles schemas/name with every other schema in schemas/ available
// for cross-file $ref by file name.
func Compile(t testing.TB, name string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	entries, err := os.ReadDir(Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		f, err := os.Open(filepath.Join(Dir(), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatalf("schemas/%s: %v", e.Name(), err)
		}
		if err := c.AddResource(Path(e.Name()), doc); err != nil {
			t.Fatalf("schemas/%s: %v", e.Name(), err)
		}
	}
	s, err := c.Compile(Path(name))
	if err != nil {
		t.Fatalf("compile schemas/%s: %v", name, err)
	}
	return s
}

// Validate checks one JSON document (bytes) against a compiled schema.
func Validate(t testing.TB, s *jsonschema.Schema, what string, data []byte) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(data)))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := s.Validate(doc); err != nil {
		t.Errorf("%s does not validate against its schema: %v", what, err)
	}
}

// Load reads schemas/name as a generic JSON value.
func Load(t testing.TB, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(Path(name))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("schemas/%s: %v", name, err)
	}
	return m
}

// Node returns the schema object at a JSON pointer ("" or "/$defs/Limits")
// in root, following local $refs.
func Node(t testing.TB, root map[string]any, pointer string) map[string]any {
	t.Helper()
	cur := root
	if pointer != "" {
		for _, part := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
			next, ok := cur[part].(map[string]any)
			if !ok {
				t.Fatalf("schema pointer %s: no %q", pointer, part)
			}
			cur = next
		}
	}
	return deref(t, root, cur)
}

func deref(t testing.TB, root, n map[string]any) map[string]any {
	for {
		ref, ok := n["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return n
		}
		n = Node(t, root, strings.TrimPrefix(ref, "#"))
	}
}

// Fields checks that the schema object at pointer has exactly the JSON
// properties of Go type typ, refuses additional properties, and recurses into
// struct-typed fields (and slices/maps of structs) whose schema has properties.
func Fields(t testing.TB, root map[string]any, pointer string, typ reflect.Type) {
	t.Helper()
	fields(t, root, Node(t, root, pointer), pointer, typ)
}

func fields(t testing.TB, root, node map[string]any, where string, typ reflect.Type) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	props, _ := node["properties"].(map[string]any)
	goFields := map[string]reflect.Type{}
	collect(typ, goFields)
	var schemaNames, goNames []string
	for k := range props {
		schemaNames = append(schemaNames, k)
	}
	for k := range goFields {
		goNames = append(goNames, k)
	}
	sort.Strings(schemaNames)
	sort.Strings(goNames)
	if !slices.Equal(schemaNames, goNames) {
		t.Errorf("schema %s properties %v; Go %s fields %v", orRoot(where), schemaNames, typ, goNames)
	}
	if ap, ok := node["additionalProperties"].(bool); !ok || ap {
		t.Errorf("schema %s must set additionalProperties: false (decoding is strict)", orRoot(where))
	}
	for name, ft := range goFields {
		p, ok := props[name].(map[string]any)
		if !ok {
			continue
		}
		p = deref(t, root, p)
		elem := ft
		for elem.Kind() == reflect.Pointer || elem.Kind() == reflect.Slice || elem.Kind() == reflect.Map {
			switch elem.Kind() {
			case reflect.Slice:
				if items, ok := p["items"].(map[string]any); ok {
					p = deref(t, root, items)
				}
			case reflect.Map:
				if ap, ok := p["additionalProperties"].(map[string]any); ok {
					p = deref(t, root, ap)
				}
			}
			elem = elem.Elem()
		}
		if elem.Kind() == reflect.Struct && p["properties"] != nil {
			fields(t, root, p, where+"/properties/"+name, elem)
		}
	}
}

func orRoot(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

func collect(t reflect.Type, m map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			collect(f.Type, m)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f.Type
	}
}

// Enum checks that the "enum" list at pointer equals want (order ignored).
func Enum(t testing.TB, root map[string]any, pointer string, want []string) {
	t.Helper()
	n := Node(t, root, pointer)
	raw, ok := n["enum"].([]any)
	if !ok {
		t.Fatalf("schema %s has no enum", pointer)
	}
	var got []string
	for _, v := range raw {
		s, _ := v.(string)
		got = append(got, s)
	}
	g, w := slices.Clone(got), slices.Clone(want)
	sort.Strings(g)
	sort.Strings(w)
	if !slices.Equal(g, w) {
		t.Errorf("schema %s enum = %v; Go has %v", pointer, got, want)
	}
}

// Const checks that the "const" at pointer equals want.
func Const(t testing.TB, root map[string]any, pointer string, want string) {
	t.Helper()
	n := Node(t, root, pointer)
	if got, _ := n["const"].(string); got != want {
		t.Errorf("schema %s const = %q; Go has %q", pointer, got, want)
	}
}
