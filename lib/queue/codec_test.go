package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/execx"
)

// The record and snapshot codecs are written by hand, member by member, so
// nothing but a test ties them to the Event, Trace and Task structs. These
// tests fill every exported field by reflection, each with its own value,
// and require the round trip to give every one of them back: a field added
// to a struct and not written and read by the codec fails here by name.

// filler sets each leaf field to a distinct non-zero value the codec can
// carry; fields with rules of their own get a value that keeps them.
type filler struct {
	t    *testing.T
	n    int
	fix  map[string]any  // field path → value
	stop map[string]bool // recursive fields left nil (the codec nests once)
}

func (f *filler) fill(v reflect.Value, path string) {
	if x, ok := f.fix[path]; ok {
		v.Set(reflect.ValueOf(x).Convert(v.Type()))
		return
	}
	f.n++
	switch v.Type() {
	case reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, f.n, time.UTC)))
		return
	case reflect.TypeFor[json.RawMessage]():
		v.SetBytes(fmt.Appendf(nil, `{"field":%q,"n":%d}`, path, f.n))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("%s-%d", path, f.n))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(f.n))
	case reflect.Uint64:
		v.SetUint(uint64(f.n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		if f.stop[path] {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		f.fill(v.Elem(), path)
	case reflect.Struct:
		for i := range v.NumField() {
			sf := v.Type().Field(i)
			if sf.IsExported() {
				f.fill(v.Field(i), join(path, sf.Name))
			}
		}
	default:
		f.t.Fatalf("%s: the codec test cannot fill a %s yet; teach filler.fill, and the codec, about it", path, v.Type())
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// zeroLeaves lists the paths of the zero leaves of v (those a decoder dropped).
func zeroLeaves(v reflect.Value, path string, stop map[string]bool, out *[]string) {
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		if v.Interface().(time.Time).IsZero() {
			*out = append(*out, path)
		}
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			if !stop[path] {
				*out = append(*out, path)
			}
			return
		}
		if v.Elem().Kind() == reflect.Struct {
			zeroLeaves(v.Elem(), path, stop, out)
		} // a pointer to a scalar is set by being there (*bool false is a value)
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if sf := v.Type().Field(i); sf.IsExported() {
				zeroLeaves(v.Field(i), join(path, sf.Name), stop, out)
			}
		}
	case v.IsZero():
		*out = append(*out, path)
	}
}

var traceFix = map[string]any{
	"Trace.Status":                 execx.StatusSucceeded,
	"Trace.OutputSaved":            new(bool), // false: the one value that carries an OutputError
	"Trace.Acceptance.Status":      execx.StatusFailed,
	"Trace.Acceptance.OutputSaved": new(bool),
	"Last.Status":                  execx.StatusFailed,
	"Last.OutputSaved":             new(bool),
	"Last.Acceptance.Status":       execx.StatusSucceeded,
	"Last.Acceptance.OutputSaved":  new(bool),
	"Trace.Acceptance.OutputError": "disk full",
	"Trace.OutputError":            "no space",
	"Last.OutputError":             "quota",
	"Last.Acceptance.OutputError":  "read-only",
}

var traceStop = map[string]bool{"Trace.Acceptance.Acceptance": true, "Last.Acceptance.Acceptance": true}

func fullEvent(t *testing.T) *Event {
	ev := new(Event)
	f := &filler{t: t, fix: map[string]any{
		"Seq":  uint64(1 << 40), // batch (filled later, smaller) must not exceed it
		"Type": EventTrace,
	}, stop: traceStop}
	for k, v := range traceFix {
		f.fix[k] = v
	}
	f.fill(reflect.ValueOf(ev).Elem(), "")
	return ev
}

func TestRecordCodecCarriesEveryField(t *testing.T) {
	ev := fullEvent(t)
	var zero []string
	zeroLeaves(reflect.ValueOf(ev).Elem(), "", traceStop, &zero)
	if len(zero) > 0 {
		t.Fatalf("the filler left %v zero", zero)
	}
	line := AppendRecord(nil, ev)
	got, err := DecodeRecord(line)
	if err != nil {
		t.Fatalf("DecodeRecord(%s): %v", line, err)
	}
	var lost []string
	zeroLeaves(reflect.ValueOf(got).Elem(), "", traceStop, &lost)
	if len(lost) > 0 {
		t.Fatalf("the record codec drops %v (record %s): write and read them in record.go", lost, line)
	}
	if !reflect.DeepEqual(got, ev) {
		a, _ := json.Marshal(ev)
		b, _ := json.Marshal(got)
		t.Fatalf("round trip changed the event:\n got %s\nwant %s", b, a)
	}
	if again := AppendRecord(nil, got); !bytes.Equal(again, line) {
		t.Fatalf("re-encoding changed the record:\n%s\n%s", line, again)
	}
}

func TestSnapshotCodecCarriesEveryField(t *testing.T) {
	var task Task
	f := &filler{t: t, fix: map[string]any{"State": StateRunning}, stop: traceStop}
	for k, v := range traceFix {
		f.fix[k] = v
	}
	f.fill(reflect.ValueOf(&task).Elem(), "")
	var zero []string
	zeroLeaves(reflect.ValueOf(&task).Elem(), "", traceStop, &zero)
	if len(zero) > 0 {
		t.Fatalf("the filler left %v zero", zero)
	}
	snap := &Snapshot{Seq: 1 << 40, Time: t0, Tasks: []Task{task}}
	data := EncodeSnapshot(snap)
	got, err := DecodeSnapshot(data)
	if err != nil {
		t.Fatalf("DecodeSnapshot(%s): %v", data, err)
	}
	if len(got.Tasks) != 1 {
		t.Fatalf("DecodeSnapshot gives %d tasks; want 1", len(got.Tasks))
	}
	var lost []string
	zeroLeaves(reflect.ValueOf(&got.Tasks[0]).Elem(), "", traceStop, &lost)
	if len(lost) > 0 {
		t.Fatalf("the snapshot codec drops %v (task line %s): write and read them in snapshot.go", lost, data)
	}
	got.Tasks[0].hidx = task.hidx
	if !reflect.DeepEqual(got.Tasks[0], task) || got.Seq != snap.Seq || !got.Time.Equal(snap.Time) {
		t.Fatalf("round trip changed the task:\n got %+v\nwant %+v", got.Tasks[0], task)
	}
}
