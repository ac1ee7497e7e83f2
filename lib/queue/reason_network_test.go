package queue

import (
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/netproxy/account"
)

// TestReasonNetworkRefusal: a failed attempt's reason names what the
// proxy refused it, the first refusal and how many more, one line.
func TestReasonNetworkRefusal(t *testing.T) {
	r := &execx.Result{Status: execx.StatusFailed, ExitCode: 1, Network: &execx.NetworkReport{
		Mode: execx.NetworkAllow,
		Refused: []account.Refused{
			{Host: "example.org", Port: 443, Reason: "example.org:443 is not in the allowlist", Count: 3},
			{Host: "10.0.0.1", Port: 80, Reason: "10.0.0.1:80 is an address, not a name in the allowlist", Count: 1},
		},
	}}
	got := Reason(r)
	want := "exited with status 1; network refused: example.org:443 is not in the allowlist (and 1 more)"
	if got != want {
		t.Fatalf("Reason = %q\nwant     %q", got, want)
	}
	r.Status, r.ExitCode = execx.StatusSucceeded, 0
	if got := Reason(r); got != "" {
		t.Fatalf("a success has reason %q", got)
	}
	if strings.Contains(Reason(&execx.Result{Status: execx.StatusFailed, Network: &execx.NetworkReport{Mode: execx.NetworkLoopback}}), "network") {
		t.Fatal("a reason without refusals mentions the network")
	}
}
