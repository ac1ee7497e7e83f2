package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/jsonx"
)

// KindLedger is the kind of a ledger file.
const KindLedger = "VerificationLedger"

// Ledger keeps a workspace's verification debt across sessions: an MCP
// client that reconnects (each MCP Inspector CLI call starts a new
// `artagent mcp` over stdio) starts with the debt the last session left,
// so an edit in one session and a finish in the next is refused as it
// would be in one. One file per workspace (named by the sha256 of its
// canonical root) in a state directory outside it, where the client
// cannot edit it, replaced atomically and fsync'd after every step; a
// lock file beside it is held for the session, so two sessions never
// share a workspace's debt unknowingly.
type Ledger struct {
	path string
	lock *fsx.Lock
	st   LedgerState
}

// LedgerState is what a ledger file holds.
type LedgerState struct {
	jsonx.TypeMeta
	Workspace string    `json:"workspace"`
	Debt      bool      `json:"debt"`
	Verified  bool      `json:"verified"`
	Updated   time.Time `json:"updated"`
}

// ErrLedgerInUse refuses a second session on a workspace whose ledger an
// open session holds.
var ErrLedgerInUse = exitcode.Sentinel(exitcode.Conflict, "another session holds the workspace's verification ledger")

// LedgerPath is the ledger file of the workspace root in dir.
func LedgerPath(dir, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(dir, "ledger-"+hex.EncodeToString(sum[:8])+".json")
}

// OpenLedger locks and reads the ledger of the workspace at root (its
// canonical path) in dir, creating dir; a missing file is a workspace
// without debt. dir must not be inside the workspace.
func OpenLedger(dir, root string) (*Ledger, error) {
	if err := fsx.MkdirState(dir); err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	if rel, err := filepath.Rel(root, real); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return nil, exitcode.Field(exitcode.Usage, "LedgerDir", dir, "inside the workspace, where the client could edit it; keep it outside")
	}
	path := LedgerPath(dir, root)
	lk, err := fsx.TryLock(path + ".lock")
	if errors.Is(err, fsx.ErrLocked) {
		return nil, fmt.Errorf("%w: %s (lock %s)", ErrLedgerInUse, root, path+".lock")
	}
	if err != nil {
		return nil, err
	}
	l := &Ledger{path: path, lock: lk, st: LedgerState{TypeMeta: jsonx.Meta(KindLedger), Workspace: root}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return l, nil
	case err != nil:
		lk.Unlock()
		return nil, err
	}
	var st LedgerState
	if err := json.Unmarshal(b, &st); err != nil || st.Kind != KindLedger || st.Workspace != root {
		lk.Unlock()
		return nil, exitcode.Fieldf(exitcode.Internal, "Ledger", path, "ledger %s is not the verification ledger of %s; remove it to start with no debt", path, root)
	}
	l.st = st
	return l, nil
}

// State is the state the ledger holds now.
func (l *Ledger) State() LedgerState { return l.st }

// Path is the ledger file.
func (l *Ledger) Path() string { return l.path }

// save records the debt after a step.
func (l *Ledger) save(debt, verified bool) error {
	if l.st.Debt == debt && l.st.Verified == verified && !l.st.Updated.IsZero() {
		return nil
	}
	st := l.st
	st.Debt, st.Verified, st.Updated = debt, verified, time.Now().UTC()
	b, err := json.Marshal(&st)
	if err != nil {
		return err
	}
	if err := fsx.WriteFile(l.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("verification ledger: %w", err)
	}
	l.st = st
	return nil
}

// Close releases the lock; a nil Ledger is closed.
func (l *Ledger) Close() error {
	if l == nil {
		return nil
	}
	return l.lock.Unlock()
}
