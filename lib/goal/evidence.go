package goal

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/words"
)

// EvidenceSyntax is the command-line form of evidence, TYPE:REF. What
// follows the first colon is the reference, taken literally (colons
// included), except where a type gives it more structure.
const EvidenceSyntax = `TYPE:REF, one of:
  note:TEXT                   a statement in words
  file:PATH                   a file; artgoal records its sha256 now (the file must exist)
  task:ID                     a finished artq task; artgoal reads its state from the queue
  task:ID=STATE               the same, and the queue must hold it in STATE (succeeded, failed, cancelled)
  event:sha256:HEX            an artobs event; artgoal finds and verifies it in the sink
  url:URL                     an absolute URL without credentials
  command:EXIT:WORDS          a command (split like a shell, nothing expanded) and its exit code
  command:EXIT@PATH:WORDS     the same, plus the sha256 of a result or output file PATH`

// ParseEvidence turns TYPE:REF into Evidence. file: and command:…@PATH read
// the named file (relative to the working directory) and record its sha256;
// a missing file is ErrNotFound (exit 4), anything else malformed exit 2.
// task:ID leaves the state empty for the queue to fill (Store.Sources);
// nothing here asks the queue or the sink anything. RecordedAt is left zero
// for the store to stamp.
func ParseEvidence(spec string) (Evidence, error) {
	typ, ref, ok := strings.Cut(spec, ":")
	if !ok || typ == "" {
		return Evidence{}, evidenceErr(spec, "want TYPE:REF (types: %s)", joinStrings(EvidenceTypes))
	}
	e := Evidence{Type: EvidenceType(typ)}
	switch e.Type {
	case EvidenceNote:
		e.Text = ref
	case EvidenceURL:
		e.URL = ref
	case EvidenceEvent:
		e.Event = ref
	case EvidenceTask:
		id, state, hasState := strings.Cut(ref, "=")
		if hasState && state == "" {
			return Evidence{}, evidenceErr(spec, "want task:ID or task:ID=STATE (states: %s)", joinStrings(TaskStates))
		}
		e.Task, e.State = id, TaskState(state)
		if !hasState {
			// The state comes from the queue; check the rest now.
			if why := idProblem(id); why != "" {
				return Evidence{}, evidenceErr(spec, "task: %q: %s (ids are %s)", id, why, IDRule)
			}
			if why := taskIDProblem(id); why != "" {
				return Evidence{}, evidenceErr(spec, "task %q: %s (task ids are %s)", id, why, TaskIDRule)
			}
			return e, nil
		}
	case EvidenceFile:
		d, err := digestFile(spec, ref)
		if err != nil {
			return Evidence{}, err
		}
		e.Path, e.Digest = filepath.Clean(ref), d
	case EvidenceCommand:
		head, cmd, ok := strings.Cut(ref, ":")
		if !ok {
			return Evidence{}, evidenceErr(spec, "want command:EXIT:WORDS or command:EXIT@PATH:WORDS")
		}
		code, path, hasPath := strings.Cut(head, "@")
		n, err := strconv.Atoi(code)
		if err != nil || n < 0 || n > MaxExitCode {
			return Evidence{}, evidenceErr(spec, "exit code %q is not a number 0-%d", code, MaxExitCode)
		}
		e.ExitCode = &n
		argv, err := words.Split(cmd)
		if err != nil {
			return Evidence{}, evidenceErr(spec, "command words: %v", err)
		}
		if len(argv) == 0 {
			return Evidence{}, evidenceErr(spec, "no command words after the exit code")
		}
		e.Argv = argv
		if hasPath {
			d, err := digestFile(spec, path)
			if err != nil {
				return Evidence{}, err
			}
			e.Path, e.Digest = filepath.Clean(path), d
		}
	default:
		return Evidence{}, evidenceErr(spec, "unknown evidence type %q (types: %s)", typ, joinStrings(EvidenceTypes))
	}
	if err := e.validate("evidence"); err != nil {
		var fe *jsonx.FieldError
		if errors.As(err, &fe) {
			return Evidence{}, evidenceErr(spec, "%s: %s", strings.TrimPrefix(fe.Path, "evidence."), fe.Msg)
		}
		return Evidence{}, evidenceErr(spec, "%v", err)
	}
	return e, nil
}

func evidenceErr(spec, format string, args ...any) error {
	return exitcode.Fieldf(exitcode.Usage, "evidence", clip(spec), "evidence %q: %s", clip(spec), fmt.Sprintf(format, args...))
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// digestFile hashes a regular file (symlinks followed) as "sha256:<hex>".
func digestFile(spec, path string) (string, error) {
	if path == "" {
		return "", evidenceErr(spec, "empty path")
	}
	if why := pathProblem(path); why != "" {
		return "", evidenceErr(spec, "path: %s", why)
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("evidence %q: %s: %w", clip(spec), path, ErrNotFound)
		}
		return "", exitcode.Fieldf(exitcode.Usage, "evidence", clip(spec), "evidence %q: %w", clip(spec), err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("evidence %q: %w", clip(spec), err)
	}
	if !st.Mode().IsRegular() {
		return "", evidenceErr(spec, "%s is not a regular file", path)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("evidence %q: read %s: %w", clip(spec), path, err)
	}
	return digestPrefix + hex.EncodeToString(h.Sum(nil)), nil
}
