package runcmd

import (
	"reflect"
	"testing"
	"time"
)

// TestFastFlagsMatchRunCmd: fast.go's flag table knows every flag Cmd
// declares to kong, by the kind its Go type and tags give it, and no other;
// and setFast stores each one in the field kong would. A flag added to
// Cmd and not to fastFlags fails here instead of silently sending every
// invocation that uses it down kong's slow path (or, worse, a flag in the
// table that Cmd no longer has).
func TestFastFlagsMatchRunCmd(t *testing.T) {
	rt := reflect.TypeFor[Cmd]()
	want := map[string]byte{}
	field := map[string]int{}
	for i := range rt.NumField() {
		f := rt.Field(i)
		name, ok := f.Tag.Lookup("name")
		if _, positional := f.Tag.Lookup("arg"); !ok || positional {
			continue
		}
		var kind byte
		switch {
		case f.Type == reflect.TypeFor[time.Duration]():
			kind = 'd'
		case f.Type.Kind() == reflect.String && f.Tag.Get("enum") != "":
			kind = 'e'
		case f.Type.Kind() == reflect.String:
			kind = 's'
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.String:
			kind = 'l'
		case f.Type.Kind() == reflect.Bool:
			kind = 'b'
		case f.Type.Kind() == reflect.Int64:
			kind = 'i'
		default:
			t.Errorf("Cmd.%s (--%s): type %s has no fast-parser kind", f.Name, name, f.Type)
			continue
		}
		want[name], field[name] = kind, i
	}
	for name, kind := range want {
		got, ok := fastFlags[name]
		switch {
		case !ok:
			t.Errorf("--%s: Cmd has it, fastFlags does not", name)
		case got != kind:
			t.Errorf("--%s: fastFlags kind %q; Cmd's type says %q", name, got, kind)
		}
	}
	for name := range fastFlags {
		if _, ok := want[name]; !ok {
			t.Errorf("--%s: in fastFlags, not a Cmd flag", name)
		}
	}
	samples := map[byte]string{'s': "x", 'l': "x", 'd': "3s", 'i': "7", 'e': "landlock"}
	for name, kind := range want {
		var c Cmd
		if kind == 'b' {
			// Bools are set by Parse itself, not setFast.
			p, ok := Parse([]string{"run", "--" + name, "--", "true"}, func(string) string { return "" })
			if !ok {
				t.Errorf("--%s: Parse declined it", name)
				continue
			}
			c = *p
			c.Command = nil
		} else if sample := samples[kind]; name == "network" && !c.setFast(name, kind, "loopback") ||
			name != "network" && !c.setFast(name, kind, sample) {
			t.Errorf("--%s: setFast declined %q", name, samples[kind])
			continue
		}
		v := reflect.ValueOf(c).Field(field[name])
		if v.IsZero() {
			t.Errorf("--%s: setFast did not store into Cmd.%s", name, rt.Field(field[name]).Name)
		}
		// Nothing else moved.
		for i := range rt.NumField() {
			if i != field[name] && !reflect.ValueOf(c).Field(i).IsZero() {
				t.Errorf("--%s: setFast also set Cmd.%s", name, rt.Field(i).Name)
			}
		}
	}
}
