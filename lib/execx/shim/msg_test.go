//go:build linux || darwin

package shim

import (
	"encoding/json"
	"reflect"
	"testing"
)

// checkMsgJSON: appendJSON writes valid JSON that encoding/json (its
// trusted peer) reads as it reads json.Marshal's own encoding of m.
func checkMsgJSON(t *testing.T, m Msg) {
	t.Helper()
	got := m.appendJSON(nil)
	var fromHand, fromJSON Msg
	if err := json.Unmarshal(got, &fromHand); err != nil {
		t.Fatalf("appendJSON(%+v) = %s: %v", m, got, err)
	}
	want, _ := json.Marshal(m)
	_ = json.Unmarshal(want, &fromJSON)
	if !reflect.DeepEqual(fromHand, fromJSON) {
		t.Fatalf("appendJSON(%+v) = %s reads as %+v; json.Marshal's %s as %+v", m, got, fromHand, want, fromJSON)
	}
}

func TestMsgJSON(t *testing.T) {
	for _, m := range []Msg{
		{Event: "started"},
		{Event: "exited", Status: 1 << 31, UserUS: 12, SysUS: -3, MaxRSS: 1 << 40},
		{Event: "error", Code: 127, Msg: "exec: \"x\": \\ not found\n\t\x00\x1f\x7f <&> \u2028 é \xff\xfe end"},
		{},
	} {
		checkMsgJSON(t, m)
	}
	if got := string((&Msg{Event: "started"}).appendJSON(nil)); got != `{"event":"started"}` {
		t.Errorf("started = %s", got)
	}
}

func FuzzMsgJSON(f *testing.F) {
	f.Add("error", "a \"quoted\" \xff message\n", 125, uint32(0), int64(0))
	f.Fuzz(func(t *testing.T, event, msg string, code int, status uint32, us int64) {
		checkMsgJSON(t, Msg{Event: event, Msg: msg, Code: code, Status: status, UserUS: us, SysUS: -us, MaxRSS: us})
	})
}
