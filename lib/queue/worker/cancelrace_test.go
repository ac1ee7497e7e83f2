package worker

import (
	"testing"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
)

// TestCancelRaceReason: a command that exits 0 as a cancel arrives (for
// one stopped with SIGSTOP and continued, the runner reports the cancel
// and the command's own clean exit) is recorded succeeded, and a
// succeeded trace carries no reason; one the cancel's signal ended keeps
// its status and reason.
func TestCancelRaceReason(t *testing.T) {
	for _, c := range []struct {
		name       string
		res        execx.Result
		wantStatus execx.Status
		wantReason string
	}{
		{"exited 0 as the cancel came", execx.Result{Status: execx.StatusCancelled, Cancelled: true}, execx.StatusSucceeded, ""},
		{"ended by the cancel's signal", execx.Result{Status: execx.StatusCancelled, Cancelled: true, Signal: "SIGTERM", ExitCode: 143}, execx.StatusCancelled, "cancelled"},
		{"failed", execx.Result{Status: execx.StatusFailed, ExitCode: 3}, execx.StatusFailed, "exited with status 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := queue.TraceOf(&c.res)
			decideCancelRace(tr)
			if tr.Status != c.wantStatus || tr.Reason != c.wantReason {
				t.Fatalf("status %s reason %q; want %s %q", tr.Status, tr.Reason, c.wantStatus, c.wantReason)
			}
		})
	}
}
