package execx

import (
	"encoding/json"
	"testing"

	"github.com/art-runtime/art/lib/execx/shim"
)

var msgSeeds = []string{
	`{"event":"started"}`,
	`{"event":"exited","status":256,"user_us":1575,"sys_us":12,"maxrss":1480}`,
	`{"event":"idle"}`,
	`{"event":"error","code":127,"msg":"start /x: no such file \u003cdir\u003e \"q\" \\ \ud83d\ude00"}`,
	`{"event":"exited","future":{"a":[1,2]},"status":9}`,
	`{"event":"exited","Status":9}`,
	`{"event":"exited","status":4294967296}`,
	`{"event":"exited","status":-1}`,
	`{"event":"exited","user_us":1.5}`,
	`{"event":7}`,
	`{"event":"started"} x`,
	`{"event":"started"`,
	`[]`,
	``,
}

// decodeMsg accepts only what encoding/json (its trusted peer) accepts,
// reading it the same, and reads every line a shim writes (json.Marshal
// of a Msg). It is stricter: no unknown members, and member names match
// exactly (encoding/json also takes other cases).
func TestDecodeMsg(t *testing.T) {
	for _, m := range []shim.Msg{
		{Event: "started"},
		{Event: "exited", Status: 0x8b, UserUS: 1 << 40, SysUS: 3, MaxRSS: 1 << 20},
		{Event: "idle"},
		{Event: "error", Code: 125, Msg: "shim: decode spec: invalid character '<' \x00 \xff é \u2028"},
	} {
		b, _ := json.Marshal(m)
		var got, want shim.Msg
		_ = json.Unmarshal(b, &want) // m, but for the invalid UTF-8 Marshal replaced
		if err := decodeMsg(b, &got); err != nil || got != want {
			t.Errorf("decodeMsg(%s) = %+v, %v; want %+v", b, got, err, want)
		}
	}
	for _, s := range msgSeeds {
		checkMsgPeer(t, []byte(s))
	}
}

func checkMsgPeer(t *testing.T, b []byte) {
	var got, want shim.Msg
	err := decodeMsg(b, &got)
	werr := json.Unmarshal(b, &want)
	if err == nil && (werr != nil || got != want) {
		t.Errorf("decodeMsg(%q) = %+v; encoding/json: %+v, %v", b, got, want, werr)
	}
	if werr != nil {
		return
	}
	line, _ := json.Marshal(want)
	var again shim.Msg
	if err := decodeMsg(line, &again); err != nil || again != want {
		t.Errorf("decodeMsg(%s) = %+v, %v; want %+v", line, again, err, want)
	}
}

func FuzzDecodeMsg(f *testing.F) {
	for _, s := range msgSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkMsgPeer(t, b) })
}
