package execx

import (
	"context"
	"testing"

	"github.com/art-runtime/art/lib/jsonx"
)

func testPolicy(t *testing.T, iso Isolation, allow ...string) *Policy {
	t.Helper()
	p := &Policy{TypeMeta: jsonx.Meta(KindPolicy), Allow: allow, Workspace: t.TempDir(), Isolation: iso}
	p.Default()
	return p
}

func TestSmoke(t *testing.T) {
	for _, tc := range []struct {
		iso Isolation
		sup bool
	}{{IsolationNone, false}, {IsolationNone, true}, {IsolationLandlock, false}, {IsolationLandlock, true}, {IsolationStrict, false}} {
		p := testPolicy(t, tc.iso, "sh")
		task := NewTask("sh", "-c", "echo hello; echo err >&2; exit 3")
		res, err := Run(context.Background(), p, task, Options{Supervised: tc.sup})
		if err != nil {
			t.Fatalf("%s/%v: %v", tc.iso, tc.sup, err)
		}
		b, _ := jsonx.Marshal(res)
		t.Logf("%s", b)
		if res.ExitCode != 3 || res.Output != "hello\nerr\n" {
			t.Errorf("%s/%v: got %+v", tc.iso, tc.sup, res)
		}
	}
}
