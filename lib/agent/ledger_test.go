package agent_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/exitcode"
)

// The ledger carries a workspace's debt from one core to the next, one
// holder at a time, and refuses a directory inside the workspace.
func TestLedger(t *testing.T) {
	ws := workspace(t)
	root, _ := filepath.EvalSymlinks(ws)
	dir := filepath.Join(t.TempDir(), "ledgers")
	l, err := agent.OpenLedger(dir, root)
	if err != nil {
		t.Fatal(err)
	}
	if l.State().Debt {
		t.Fatal("a new ledger has debt")
	}
	if _, err := agent.OpenLedger(dir, root); !errors.Is(err, agent.ErrLedgerInUse) || exitcode.Of(err) != exitcode.Conflict {
		t.Fatalf("second holder: %v", err)
	}
	cfg := config(ws)
	c, err := agent.NewCore(cfg, agent.Options{Ledger: l})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Take(t.Context(), agent.Move{Reply: `{"action":"replace_text","path":"a.txt","old":"hello","new":"bye"}`}); err != nil {
		t.Fatal(err)
	}
	l.Close()

	l, err = agent.OpenLedger(dir, root)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !l.State().Debt {
		t.Fatalf("the debt did not outlive the core: %+v", l.State())
	}
	c, err = agent.NewCore(cfg, agent.Options{Ledger: l})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Take(t.Context(), agent.Move{Reply: `{"action":"finish","summary":"done"}`})
	if err != nil || out.Refusal != agent.RefusalDebt {
		t.Fatalf("finish in the next core: %+v, %v", out, err)
	}
	if _, err := agent.OpenLedger(filepath.Join(ws, "state"), root); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("ledger inside the workspace: %v", err)
	}
}

// FuzzLedger: whatever a ledger file holds, opening it never panics, and
// it is either refused or read as the ledger of that workspace.
func FuzzLedger(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"art/v1alpha1","kind":"VerificationLedger","workspace":"/w","debt":true,"verified":false,"updated":"2026-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"kind":"VerificationLedger","workspace":"/elsewhere","debt":true}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(agent.LedgerPath(dir, "/w"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := agent.OpenLedger(dir, "/w")
		if err != nil {
			return
		}
		defer l.Close()
		if l.State().Workspace != "/w" || l.State().Kind != agent.KindLedger {
			t.Fatalf("accepted %q as %+v", b, l.State())
		}
	})
}
