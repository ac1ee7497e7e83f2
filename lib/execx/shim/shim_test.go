package shim

import (
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/execx/stage"
)

func TestDecodeSpec(t *testing.T) {
	good := (&Spec{Stage: stage.Spec{Path: "/bin/true", Argv: []string{"true"}}, Supervise: true}).Encode()
	if s, err := decodeSpec(good); err != nil || s.Stage.Path != "/bin/true" || !s.Supervise {
		t.Fatalf("decodeSpec(%s) = %+v, %v", good, s, err)
	}
	for _, c := range []struct{ name, in, want string }{
		{"unknown field", `{"proto":3,"stage":{"path":"/bin/true","argv":["true"],"env":null},"sandbox":"x"}`, `unknown field "sandbox"`},
		{"unknown stage field", `{"proto":3,"stage":{"path":"/bin/true","argv":["true"],"env":null,"new_limit":1}}`, `unknown field "new_limit"`},
		{"other protocol", `{"proto":9,"stage":{"path":"/bin/true","argv":["true"],"env":null}}`, "spec protocol 9"},
		{"no protocol", `{"stage":{"path":"/bin/true","argv":["true"],"env":null}}`, "spec protocol 0"},
		{"not json", `{`, "decode spec"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := decodeSpec([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("decodeSpec(%s) = %v, want an error with %q", c.in, err, c.want)
			}
		})
	}
}
