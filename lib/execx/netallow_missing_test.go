package execx

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/execx/internal/nethook"
)

// Without lib/execx/netallow linked (the artexec binary), network allow
// is refused before anything starts: a policy listing destinations fails
// its validation at that entry, a narrowing to destinations and a run in
// mode allow fail with ErrNoProxy, and the task never ran. Not parallel:
// it takes the implementation away from the whole test binary.
func TestNetworkAllowNotLinked(t *testing.T) {
	prev := nethook.Get()
	nethook.Set(nil)
	t.Cleanup(func() { nethook.Set(prev) })

	doc := `{"apiVersion":"art/v1alpha1","kind":"Policy","allow":["true"],"workspace":"/tmp","network":{"mode":"allow","allow":["example.com"]}}`
	if _, err := DecodePolicy([]byte(doc)); err == nil || !strings.Contains(err.Error(), "policy.network.allow[0]") || !strings.Contains(err.Error(), "not linked") {
		t.Errorf("DecodePolicy with destinations: %v; want an error at policy.network.allow[0] saying network allow is not linked", err)
	}
	if err := CheckNetworkRule("example.com"); !errors.Is(err, ErrNoProxy) {
		t.Errorf("CheckNetworkRule: %v; want ErrNoProxy", err)
	}

	p := policyFor(t, IsolationNone, "sh")
	p.Network = NetworkPolicy{Mode: NetworkAllow}
	if _, err := p.Narrow(Narrowing{AllowHosts: []string{"example.com"}}); !errors.Is(err, ErrNoProxy) {
		t.Errorf("Narrow to a destination: %v; want ErrNoProxy", err)
	}
	res, err := Run(context.Background(), p, sh("touch ran"), Options{})
	if !errors.Is(err, ErrNoProxy) {
		t.Errorf("Run under network allow: %v (result %+v); want ErrNoProxy", err, res)
	}
	if ents, _ := os.ReadDir(p.Workspace); len(ents) != 0 {
		t.Errorf("the workspace holds %v: the task ran", ents)
	}
}
