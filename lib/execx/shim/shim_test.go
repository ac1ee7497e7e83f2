package shim

import (
	"reflect"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/execx/stage"
)

// fullSpec sets every field of Spec, stage.Spec and stage.View, so a
// field the codec forgets fails the round trip.
func fullSpec() *Spec {
	long := strings.Repeat("x", 300) // a nested message over 127 bytes: a longer length
	return &Spec{
		Stage: stage.Spec{
			Path: "/bin/true", Argv: []string{"true", "", long}, Env: []string{"A=1", "B="},
			Rlimits:    []stage.Rlimit{{Name: "cpu", Resource: 0, Value: 100}, {Name: "as", Resource: 9, Value: 1 << 63}},
			NofileSoft: 1024, NNP: true, DropCaps: true, KeepCaps: []int{0, 21},
			Landlock: 5, RW: []string{"/ws", long}, RWFDs: []int{10, 11}, Nodes: []string{stage.NodeFIFO},
			Filters: [][]byte{{1, 2, 3, 4, 5, 6, 7, 8}, make([]byte, 200)}, PrivateTmp: "/tmp", NetOpen: true,
		},
		Direct:    true,
		View:      &stage.View{Proc: true, ReadOnly: true, RW: []string{"/ws"}, Tmp: true, TmpSize: 1 << 30, Cwd: "/ws/sub"},
		StageView: &stage.View{ReadOnly: true, RW: []string{long}, Cwd: "/"},
		PIDNS:     true, MapIDs: true, UID: 65534, GID: -1, Supervise: true, Stderr: true,
		RWTrees: 2, Loopback: true, ProxyPort: 3128, Cgroup: true,
	}
}

func TestSpecRoundTrip(t *testing.T) {
	for name, s := range map[string]*Spec{
		"full":    fullSpec(),
		"minimal": {Stage: stage.Spec{Path: "/bin/true", Argv: []string{"true"}}, Supervise: true},
		"zero":    {},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := decodeSpec(s.Encode())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, s) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, s)
			}
		})
	}
	// Every field of the three structs is set in fullSpec (a new field
	// must be added there, and to the codec).
	for _, v := range []any{*fullSpec(), fullSpec().Stage, *fullSpec().View} {
		rv := reflect.ValueOf(v)
		for i := range rv.NumField() {
			if rv.Field(i).IsZero() && rv.Type().Field(i).Name != "Proto" { // Encode sets it
				t.Errorf("fullSpec leaves %s.%s zero", rv.Type().Name(), rv.Type().Field(i).Name)
			}
		}
	}
}

// tagOf is the tag of the field name in a message's table.
func tagOf(fs []field, name string) byte {
	for i, f := range fs {
		if f.name == name {
			return byte(i + 1)
		}
	}
	panic("no field " + name)
}

var (
	tagStage     = tagOf(specFields(&Spec{}), "stage")
	tagDirect    = tagOf(specFields(&Spec{}), "direct")
	tagView      = tagOf(specFields(&Spec{}), "view")
	tagUID       = tagOf(specFields(&Spec{}), "uid")
	tagSupervise = tagOf(specFields(&Spec{}), "supervise")
	tagPath      = tagOf(stageFields(&stage.Spec{}), "path")
	tagArgv      = tagOf(stageFields(&stage.Spec{}), "argv")
	tagEnv       = tagOf(stageFields(&stage.Spec{}), "env")
	tagRlimits   = tagOf(stageFields(&stage.Spec{}), "rlimits")
	tagNNP       = tagOf(stageFields(&stage.Spec{}), "nnp")
)

func TestDecodeSpecRefuses(t *testing.T) {
	good := fullSpec().Encode()
	proto := []byte{Protocol}
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "no protocol number"},
		{"other protocol", []byte{9}, "spec protocol 9, this shim speaks"},
		{"json of an older build", []byte(`{"proto":5}`), "spec protocol 123"},
		{"unknown field", append(proto, 0x7f), "unknown field 127 in spec"},
		{"tag zero", append(proto, 0), "unknown field 0 in spec"},
		{"unknown stage field", append(proto, tagStage, 1, 0x40), "unknown field 64 in stage"},
		{"unknown view field", append(proto, tagView, 1, 9), "unknown field 9 in view"},
		{"repeated field", append(proto, tagDirect, tagDirect), "direct: out of order or repeated"},
		{"out of order", append(proto, tagSupervise, tagDirect), "direct: out of order or repeated"},
		{"truncated int", append(proto, tagUID), "uid: truncated"},
		{"truncated message", append(proto, tagStage, 5, tagNNP), "stage: truncated: 5 bytes, 1 left"},
		{"truncated string", append(proto, tagStage, 3, tagPath, 9, 'x'), "stage.path: truncated: 9 bytes, 1 left"},
		{"count beyond the message", append(proto, tagStage, 2, tagArgv, 0x7f), "stage.argv: 127 elements in 0 bytes"},
		{"huge count", append(proto, tagStage, 11, tagEnv, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), "stage.env: 18446744073709551615 elements"},
		{"bad rlimit", append(proto, tagStage, 4, tagRlimits, 1, 1, 9), "unknown field 9 in stage.rlimits"},
		{"int overflow", append(proto, tagUID, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), "uid: truncated number"},
		{"good spec cut short", good[:len(good)/2], "truncated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if s, err := decodeSpec(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("decodeSpec(%q) = %+v, %v; want an error with %q", c.in, s, err, c.want)
			}
		})
	}
}

// FuzzDecodeSpec: no input panics or allocates beyond its size, and
// whatever decodes encodes back to a spec that decodes the same.
func FuzzDecodeSpec(f *testing.F) {
	f.Add(fullSpec().Encode())
	f.Add((&Spec{Stage: stage.Spec{Path: "/bin/true", Argv: []string{"true"}}, Supervise: true}).Encode())
	f.Add([]byte{Protocol, tagStage, 2, tagArgv, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSpec(b)
		if err != nil {
			return
		}
		again, err := decodeSpec(s.Encode())
		if err != nil {
			t.Fatalf("re-encoded spec refused: %v", err)
		}
		if !reflect.DeepEqual(again, s) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", again, s)
		}
	})
}
