// Package transcript owns the agent's durable run history: versioned JSON
// Lines, one record appended and fsync'd per event of the run (start,
// intent, step, resume, end), so a killed run keeps everything up to its
// last completed step and can be resumed from it, and a finished run can be
// replayed as a cassette.
//
// It refuses to share: a transcript is held under an exclusive flock for as
// long as a run appends to it (on the dedicated lock file FILE.lock beside
// it, through fsx.Log, which also owns the torn-tail cut, the undone short
// write and the sync), a new run refuses a non-empty file, and a record
// that does not decode is an error naming its line. A torn last line (a crash mid-write)
// is dropped on resume and the drop is recorded. It never holds secrets:
// the loop writes requests by hash only, and nothing here sees credentials.
package transcript

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/fsx"
	"github.com/art-runtime/art/lib/jsonx"
)

// Kind is the kind of every record.
const Kind = "TranscriptRecord"

// Record types.
const (
	TypeStart  = "start"  // the run's configuration, first record
	TypeIntent = "intent" // a decoded decision about to be acted on
	TypeStep   = "step"   // one completed step
	TypeResume = "resume" // a later process continues the run
	TypeEnd    = "end"    // the run's final status
)

// Types lists every record type, for schemas and parity tests.
var Types = []string{TypeStart, TypeIntent, TypeStep, TypeResume, TypeEnd}

// Record is one line. Which fields are set depends on Type.
type Record struct {
	jsonx.TypeMeta
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	Step int       `json:"step,omitempty"`

	// start
	Run *Run `json:"run,omitempty"`

	// intent and step: the decoded decision (absent when malformed).
	Decision json.RawMessage `json:"decision,omitempty"`

	// step
	RequestHash string          `json:"request_hash,omitempty"`
	Reply       *string         `json:"reply,omitempty"` // the model's raw text
	Outcome     string          `json:"outcome,omitempty"`
	Refusal     string          `json:"refusal,omitempty"`
	Observation *string         `json:"observation,omitempty"`
	Elided      int64           `json:"elided,omitempty"`
	ExitCode    *int            `json:"exit_code,omitempty"`
	Edited      bool            `json:"edited,omitempty"`
	State       *State          `json:"state,omitempty"`
	Usage       *provider.Usage `json:"usage,omitempty"`
	LatencyMS   int64           `json:"latency_ms,omitempty"`
	Interrupted bool            `json:"interrupted,omitempty"`
	// Retries are the failed provider attempts before the step's reply
	// (on an end record: before the provider gave up).
	Retries []provider.Attempt `json:"retries,omitempty"`
	// Denied names the CLI tools the provider reported denied instead of
	// a decision (step records with refusal "tool"), so a cassette can
	// replay them.
	Denied []string `json:"denied,omitempty"`
	// Ended marks a truncated step whose reply the server ended without a
	// finish reason (rather than at the token limit), so a cassette can
	// replay it.
	Ended bool `json:"ended,omitempty"`

	// resume
	DroppedBytes int64 `json:"dropped_bytes,omitempty"`

	// end
	Status string `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Run is what a resumed run must agree with.
type Run struct {
	Task      string   `json:"task"`
	Workspace string   `json:"workspace"`
	Allow     []string `json:"allow"`
	Verify    []string `json:"verify"`
	Provider  string   `json:"provider"`
}

// State is the loop's bookkeeping after a step; a resumed run starts from
// the last one.
type State struct {
	Debt         bool `json:"debt"`
	Verified     bool `json:"verified"`
	Edits        int  `json:"edits"`
	FormatErrors int  `json:"format_errors"`
	// Truncations counts replies in a row cut off at the token limit.
	Truncations int `json:"truncations,omitempty"`
}

// New returns a record of type typ stamped with the current time.
func New(typ string) *Record {
	return &Record{TypeMeta: jsonx.Meta(Kind), Type: typ, Time: time.Now().UTC()}
}

// Errors.
var (
	ErrExists  = exitcode.Sentinel(exitcode.Conflict, "transcript already holds a run")
	ErrInUse   = exitcode.Sentinel(exitcode.Conflict, "transcript is in use by another run")
	ErrCorrupt = exitcode.Sentinel(exitcode.Internal, "transcript is corrupt")
)

// MaxLine bounds one record; observations are already bounded by the loop.
const MaxLine = 64 << 20

// Writer appends records to a locked transcript.
type Writer struct {
	log  *fsx.Log
	path string
	end  int64 // the file's size after the last append
}

// LockSuffix names a transcript's lock file: FILE + LockSuffix.
const LockSuffix = ".lock"

// Create opens path for a new run: it is created (0600) if missing, and
// refused if it already holds records.
func Create(path string) (*Writer, error) {
	w, err := open(path)
	if err != nil {
		return nil, err
	}
	if w.end > 0 {
		w.Close()
		return nil, fmt.Errorf("transcript %s: %w", path, ErrExists)
	}
	return w, nil
}

// Resume opens an existing transcript to continue its run: it reads every
// record, drops a torn last line (truncating the file to the last complete
// record, and saying how many bytes went), and returns the records.
func Resume(path string) (*Writer, []Record, int64, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, nil, 0, exitcode.Wrap(exitcode.NotFound, fmt.Errorf("transcript %s: %w", path, errors.Unwrap(err)))
	}
	w, err := open(path)
	if err != nil {
		return nil, nil, 0, err
	}
	recs, good, err := read(w.log.Lines(0, w.end), path)
	if err != nil {
		w.Close()
		return nil, nil, 0, err
	}
	size := w.end
	if good < size {
		if err := w.log.Trim(good); err != nil {
			w.Close()
			return nil, nil, 0, fmt.Errorf("transcript %s: drop torn record: %w", path, err)
		}
		w.end = good
	}
	return w, recs, size - good, nil
}

// Read returns the records of a transcript without locking or changing it
// (a torn last line is ignored): what a cassette replays.
func Read(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.NotFound, fmt.Errorf("transcript %s: %w", path, errors.Unwrap(err)))
	}
	defer f.Close()
	recs, _, err := read(fsx.NewLineReader(f, 0, -1, MaxLine), path)
	return recs, err
}

func open(path string) (*Writer, error) {
	l, err := fsx.OpenLog(path, fsx.LogOptions{Create: true, LockPath: path + LockSuffix, MaxLine: MaxLine})
	if errors.Is(err, fsx.ErrNotRegular) {
		return nil, exitcode.Errorf(exitcode.Usage, "transcript %s: not a regular file", path)
	}
	if err != nil {
		return nil, fmt.Errorf("transcript %s: %w", path, errors.Unwrap(err))
	}
	if err := l.TryLock(); err != nil {
		l.Close()
		if errors.Is(err, fsx.ErrLocked) {
			return nil, fmt.Errorf("transcript %s: %w", path, ErrInUse)
		}
		return nil, fmt.Errorf("transcript %s: %w", path, err)
	}
	// The directory entries of files we may just have created must be as
	// durable as the records in them.
	if err := fsx.SyncDir(filepath.Dir(path)); err != nil {
		l.Close()
		return nil, err
	}
	size, err := l.Size()
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("transcript %s: %w", path, err)
	}
	return &Writer{log: l, path: path, end: size}, nil
}

// read decodes the complete lines rd returns; good is the byte offset just
// past the last of them (a final fragment is a torn record).
func read(rd *fsx.LineReader, path string) (recs []Record, good int64, err error) {
	for n := 1; ; n++ {
		b, _, complete, rerr := rd.Next()
		if rerr == io.EOF {
			return recs, good, nil
		}
		if rerr != nil {
			return nil, 0, fmt.Errorf("transcript %s: line %d: %w", path, n, rerr)
		}
		if !complete {
			if rd.Overlong() {
				return nil, 0, fmt.Errorf("transcript %s: line %d: %w: record longer than %d bytes", path, n, ErrCorrupt, MaxLine)
			}
			return recs, good, nil
		}
		var rec Record
		if err := jsonx.Unmarshal(b, "record", &rec); err != nil {
			return nil, 0, fmt.Errorf("transcript %s: line %d: %w: %v", path, n, ErrCorrupt, err)
		}
		if rec.APIVersion != jsonx.APIVersion || rec.Kind != Kind {
			return nil, 0, fmt.Errorf("transcript %s: line %d: %w: not an %s %s record", path, n, ErrCorrupt, jsonx.APIVersion, Kind)
		}
		recs = append(recs, rec)
		good = rd.Offset()
	}
}

// Append writes one record as one line and fsyncs it before returning: the
// caller changes its in-memory state only after the record is durable. A
// write that fails part-way is cut off again, so the transcript never ends
// in half a record its writer goes on after.
func (w *Writer) Append(r *Record) error {
	b, err := jsonx.Marshal(r)
	if err != nil {
		return fmt.Errorf("transcript %s: encode record: %w", w.path, err)
	}
	b = append(b, '\n')
	if err := w.log.Append(b, w.end); err != nil {
		return fmt.Errorf("transcript %s: append: %w", w.path, err)
	}
	w.end += int64(len(b))
	if err := w.log.Sync(); err != nil {
		return fmt.Errorf("transcript %s: sync: %w", w.path, err)
	}
	return nil
}

// Path is the transcript's file name.
func (w *Writer) Path() string { return w.path }

// Close releases the lock.
func (w *Writer) Close() error { return w.log.Close() }
