package goal

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/jsonx"
)

// Store keeps journals as HOME/goals/ID.json (0600, directory 0700), one
// file per goal, each guarded by the flock of its own HOME/goals/ID.lock.
//
// Every mutation is: take the goal's lock, load and validate the whole
// stored journal, check the caller's revision, apply the change to a deep
// copy, stamp what is new, check that the result is a legitimate successor,
// then write temp → fsync → rename → fsync dir (fsx.WriteFile). A refused
// mutation writes nothing: the file stays byte-for-byte what it was.
//
// Readers (Get, List) take no lock: a rename is atomic, so they see the old
// journal or the new one, never a mix.
type Store struct {
	dir string
	// Now is the store's clock (time.Now unless a test replaces it). A
	// clock that steps backwards never moves updated_at back: a mutation is
	// stamped at the later of now and the stored updated_at.
	Now func() time.Time
	// Sources, when set, verifies every piece of task and event evidence a
	// mutation appends (VerifyEvidence), under the goal's lock, before the
	// step is checked and written: a task that has not finished, a state
	// the queue does not hold, an unknown task or event, or a sink record
	// that does not verify refuses the whole step. nil records task and
	// event evidence as given (the library's callers vouch for it).
	Sources Sources
	// OnUpdate, when set, is told about every mutation once it is
	// decided: a Create that stored its journal, and every Update (and
	// Check, Seal, Close, Put) whether stored or refused. It is how a
	// store is observed (lib/goal/goalobs records goal.created,
	// goal.updated and goal.update_refused) without the journal knowing
	// by whom. It runs after the goal's lock is released and cannot
	// change the outcome.
	OnUpdate func(Change)
}

// Change is one decided mutation, as OnUpdate sees it.
type Change struct {
	ID string
	// Created is true for a Create (Before is then nil).
	Created bool
	// Before is the stored journal the mutation was applied to, read
	// under the goal's lock: exact, not a racy re-read. It is nil when the
	// mutation was refused before it was applied (a bad id, a missing
	// goal, a stale revision, a closed goal).
	Before *Journal
	// After is the stored result (nil when refused).
	After *Journal
	// Err is the refusal (nil when stored).
	Err error
}

// NewStore returns the store under the state home (README.md, "Conventions every tool shares"). It
// creates nothing until the first goal is created.
func NewStore(home string) *Store {
	return &Store{dir: filepath.Join(home, "goals"), Now: time.Now}
}

// Dir is the directory holding the journals.
func (s *Store) Dir() string { return s.dir }

// Path is the journal file of goal id.
func (s *Store) Path(id string) string { return filepath.Join(s.dir, id+".json") }

func (s *Store) lockPath(id string) string { return filepath.Join(s.dir, id+".lock") }

// Get loads and validates the journal of goal id: ErrNotFound (exit 4) when
// there is none, ErrCorrupt (exit 125) when the stored bytes are not a
// valid journal of that id.
func (s *Store) Get(id string) (*Journal, error) {
	if err := CheckID("goal id", id); err != nil {
		return nil, err
	}
	return s.load(id)
}

func (s *Store) load(id string) (*Journal, error) {
	data, err := readFile(s.Path(id))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("goal %s: %w", id, ErrNotFound)
		}
		return nil, exitcode.Wrap(exitcode.Internal, fmt.Errorf("goal %s: %w", id, err))
	}
	j, err := DecodeJournal(data)
	if err != nil {
		return nil, fmt.Errorf("goal %s: %w: %s: %v", id, ErrCorrupt, s.Path(id), err)
	}
	if j.ID != id {
		return nil, fmt.Errorf("goal %s: %w: %s holds goal %q", id, ErrCorrupt, s.Path(id), j.ID)
	}
	return j, nil
}

// readFile reads at most MaxJournalBytes; a larger file is refused rather
// than read into memory.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadLimited(f, path)
}

// ReadLimited reads a journal or closure document of at most
// MaxJournalBytes from r; name is used in the error.
func ReadLimited(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxJournalBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > MaxJournalBytes {
		return nil, exitcode.Errorf(exitcode.Usage, "%s: larger than %d bytes", name, MaxJournalBytes)
	}
	return data, nil
}

// wrongKind reports a document of another kind before strict decoding
// would: "journal.kind: got "Task"" says more than the Task's first field
// being unknown to a Goal. Anything it cannot read is left to the strict
// decoder.
func wrongKind(data []byte, root, want string) error {
	// gjson stops at the field instead of parsing the whole document.
	kind := gjson.GetBytes(data, "kind")
	if kind.Type == gjson.String && kind.Str != "" && kind.Str != want && gjson.ValidBytes(data) {
		return jsonx.Errorf(root+".kind", "got %q, want %q", kind.Str, want)
	}
	return nil
}

// DecodeJournal strictly decodes and validates a whole journal (exit 2 on
// any problem, the field path named).
func DecodeJournal(data []byte) (*Journal, error) {
	if err := wrongKind(data, "journal", Kind); err != nil {
		return nil, err
	}
	var j Journal
	if err := jsonx.Decode(data, "journal", &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// draft is a journal decoded for structure and header only: a put document
// may leave the timestamps of what it adds empty for the store to stamp, so
// it is validated after stamping, not before.
type draft Journal

func (*draft) DocumentKind() string { return Kind }

// DecodeDraft decodes a put document: strict structure and header, defaults
// applied, not yet validated (Store.Put validates it after stamping).
func DecodeDraft(data []byte) (*Journal, error) {
	if err := wrongKind(data, "journal", Kind); err != nil {
		return nil, err
	}
	var d draft
	if err := jsonx.Decode(data, "journal", &d); err != nil {
		return nil, err
	}
	j := (*Journal)(&d)
	j.Default()
	return j, nil
}

// DecodeClosure strictly decodes and validates a GoalClosure document.
func DecodeClosure(data []byte) (*ClosureDocument, error) {
	if err := wrongKind(data, "closure", KindClosure); err != nil {
		return nil, err
	}
	var c ClosureDocument
	if err := jsonx.Decode(data, "closure", &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// Create stores a genesis journal. It refuses anything but genesis
// (ErrIllegal, exit 3) and an id that exists (ErrExists, exit 3).
func (s *Store) Create(j *Journal) (*Journal, error) {
	out, err := s.create(j)
	if err == nil && s.OnUpdate != nil {
		s.OnUpdate(Change{ID: out.ID, Created: true, After: out.Clone()})
	}
	return out, err
}

func (s *Store) create(j *Journal) (*Journal, error) {
	if err := CheckGenesis(j); err != nil {
		return nil, fmt.Errorf("goal %s: %w", j.ID, err)
	}
	if err := fsx.MkdirState(s.dir); err != nil {
		return nil, exitcode.Wrap(exitcode.Internal, err)
	}
	l, err := fsx.LockFile(s.lockPath(j.ID))
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Internal, err)
	}
	defer l.Unlock()
	if _, err := os.Lstat(s.Path(j.ID)); err == nil {
		return nil, fmt.Errorf("goal %s: %w", j.ID, ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, exitcode.Wrap(exitcode.Internal, err)
	}
	if err := s.write(j); err != nil {
		return nil, err
	}
	s.removeTemps(j.ID)
	return j.Clone(), nil
}

// Update applies mutate to a deep copy of goal id at revision rev and
// stores the result if it is a legitimate successor. See Store.
func (s *Store) Update(id string, rev int64, mutate func(next *Journal) error) (*Journal, error) {
	var before *Journal
	out, err := s.update(id, rev, mutate, &before)
	if s.OnUpdate != nil {
		c := Change{ID: id, Before: before, Err: err}
		if out != nil {
			c.After = out.Clone()
		}
		s.OnUpdate(c)
	}
	return out, err
}

// update is Update; *before is set to the stored journal once it is
// loaded (for OnUpdate).
func (s *Store) update(id string, rev int64, mutate func(next *Journal) error, before **Journal) (*Journal, error) {
	if err := CheckID("goal id", id); err != nil {
		return nil, err
	}
	if rev < 1 {
		return nil, exitcode.Fieldf(exitcode.Usage, "Rev", strconv.FormatInt(rev, 10), "goal %s: revision must be at least 1, got %d", id, rev)
	}
	// Look before taking the lock so a mistyped id leaves no lock file.
	if _, err := os.Lstat(s.Path(id)); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("goal %s: %w", id, ErrNotFound)
	}
	l, err := fsx.LockFile(s.lockPath(id))
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Internal, err)
	}
	defer l.Unlock()
	prev, err := s.load(id)
	if err != nil {
		return nil, err
	}
	if prev.Revision != rev {
		return nil, &RevisionError{ID: id, Given: rev, Revision: prev.Revision}
	}
	if prev.Closed() {
		return nil, fmt.Errorf("goal %s: %w at %s: a closed goal is immutable", id, ErrClosed, stamp(prev.Closure.ClosedAt))
	}
	next := prev.Clone()
	if s.OnUpdate != nil {
		*before = prev.Clone()
	}
	if err := mutate(next); err != nil {
		return nil, fmt.Errorf("goal %s: %w", id, err)
	}
	if s.Sources != nil {
		err := eachNewEvidence(prev, next, func(path string, e *Evidence) error {
			if !needsSource(e) {
				return nil
			}
			// Malformed evidence is invalid input (exit 2) whatever the
			// queue or sink would say: check its shape before asking.
			if err := e.validateUnverified("journal." + path); err != nil {
				return err
			}
			if err := VerifyEvidence(e, s.Sources); err != nil {
				return fmt.Errorf("%s (%s): %w", path, describe(e), err)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("goal %s: %w", id, err)
		}
	}
	now := s.Now().UTC()
	if now.Before(prev.UpdatedAt) {
		now = prev.UpdatedAt
	}
	next.Revision = prev.Revision + 1
	next.UpdatedAt = now
	stampNew(prev, next, now)
	if err := CheckSuccessor(prev, next); err != nil {
		return nil, fmt.Errorf("goal %s: %w", id, err)
	}
	if err := s.write(next); err != nil {
		return nil, err
	}
	s.removeTemps(id)
	return next.Clone(), nil
}

// Check appends evidence to checklist item (index or id).
func (s *Store) Check(id string, rev int64, item string, e Evidence) (*Journal, error) {
	return s.Update(id, rev, func(j *Journal) error { return j.AddEvidence(item, e) })
}

// Seal seals the current phase with a receipt and advances.
func (s *Store) Seal(id string, rev int64, summary string, evidence []Evidence) (*Journal, error) {
	return s.Update(id, rev, func(j *Journal) error { return j.Seal(summary, evidence) })
}

// Close records the closure; the goal is immutable afterwards.
func (s *Store) Close(id string, rev int64, doc *ClosureDocument) (*Journal, error) {
	return s.Update(id, rev, func(j *Journal) error { return j.Close(doc) })
}

// Put replaces goal id with a caller-supplied successor, checked by the
// same rules as every other mutation. The document names the revision it
// was derived from (its revision must be rev) and keeps that revision's
// updated_at or leaves it out; the store advances both. Timestamps of what
// the document adds may be left out for the store to stamp.
func (s *Store) Put(id string, rev int64, doc *Journal) (*Journal, error) {
	return s.Update(id, rev, func(j *Journal) error { return j.Replace(doc) })
}

// List loads every journal in the store, sorted by id. Files whose names
// are not ID.json (lock files, temp files left by a crashed writer) are
// not journals and are skipped; a journal that fails to load is reported in
// problems and the others are still returned.
func (s *Store) List() (journals []*Journal, problems []error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, []error{exitcode.Wrap(exitcode.Internal, fmt.Errorf("list goals: %w", err))}
	}
	var ids []string
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if ok && idProblem(id) == "" && e.Type().IsRegular() {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		j, err := s.load(id)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		journals = append(journals, j)
	}
	return journals, problems
}

func (s *Store) write(j *Journal) error {
	data, err := j.Marshal()
	if err != nil {
		return exitcode.Wrap(exitcode.Internal, fmt.Errorf("goal %s: encode: %w", j.ID, err))
	}
	if err := fsx.WriteFile(s.Path(j.ID), data, fsx.FileMode); err != nil {
		return exitcode.Wrap(exitcode.Internal, fmt.Errorf("goal %s: %w", j.ID, err))
	}
	return nil
}

// removeTemps deletes temp files a writer of this goal left when it died
// between creating its temp file and renaming it (ID.json followed by
// digits, the natefinch/atomic pattern). The caller holds the goal's lock,
// so no live writer owns them. Failure to remove is harmless: they are never
// read as journals.
func (s *Store) removeTemps(id string) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	prefix := id + ".json"
	for _, e := range entries {
		if rest, ok := strings.CutPrefix(e.Name(), prefix); ok && isDigits(rest) {
			_ = os.Remove(filepath.Join(s.dir, e.Name()))
		}
	}
}
