package obs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/exitcode"
)

// ErrNoEvent: the sink holds no record with the id sought (exit 4).
var ErrNoEvent = exitcode.Sentinel(exitcode.NotFound, "no such event")

// Found is a record Lookup found and verified.
type Found struct {
	Envelope *Envelope
	Line     int   // 1-based line of the record in the file
	Offset   int64 // byte offset of the line
}

// Lookup finds the record whose id is id in the JSONL sink at path and
// verifies it: the record must parse as an envelope and its id must be the
// hash of its content, so what is returned is what the event said when it
// was sealed. It is how other tools (artgoal's event evidence) cite an
// event without trusting whoever named it.
//
// It only reads: no lock, nothing created or written (appenders write whole
// records with one write(2)). A last record without its newline is still
// being written, or torn, and is not read. Lines are matched by their
// top-level id without a full parse, so the cost is one pass over the file
// and one parse.
//
// Refusals: an id that is not sha256: and 64 lower-case hex digits (exit
// 2); a missing file or id (exit 4: ErrNoEvent for the id); a path that is
// not a regular file (exit 126); a record that claims the id but does not
// verify (ErrCorrupt, exit 125: the sink was altered, and a record that was
// altered is no evidence of anything).
func Lookup(path, id string) (Found, error) {
	want, ok := digestOf(id)
	if !ok {
		return Found{}, exitcode.Fieldf(exitcode.Usage, "event", id, "event %q: not sha256: and 64 lower-case hex digits", id)
	}
	// Non-blocking, so a FIFO in place of the sink is refused below instead
	// of hanging the open until a writer appears.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Found{}, exitcode.Field(exitcode.NotFound, "Events", path, "no such file").Because(os.ErrNotExist)
		}
		return Found{}, exitcode.Errorf(exitcode.Internal, "events %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Found{}, exitcode.Errorf(exitcode.Internal, "events %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return Found{}, exitcode.Wrap(exitcode.Refused, fmt.Errorf("events %s: %w", path, ErrNotRegular))
	}
	needle := []byte(`"id":"` + id + `"`)
	br := bufio.NewReaderSize(f, 1<<16)
	var off int64
	for lineNo := 1; ; lineNo++ {
		line, n, tooLong, err := readLine(br, MaxDraftBytes)
		if n == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			return Found{}, exitcode.Errorf(exitcode.Internal, "events %s: %w", path, err)
		}
		start := off
		off += n
		if err == io.EOF {
			break // no newline: still being written, or torn
		}
		if tooLong || !bytes.Contains(line, needle) {
			continue
		}
		if got, _, _, ok := peek(line); ok && got != want {
			continue // the id is in another record's attrs
		}
		env, _, perr := ParseEnvelope(line)
		if perr != nil {
			return Found{}, exitcode.Wrap(exitcode.Internal, fmt.Errorf("event %s: %s line %d: %w: %v", id, path, lineNo, ErrCorrupt, perr))
		}
		if env.id != id {
			// peek could not read the line but the parse could: the id was
			// in its attrs after all.
			continue
		}
		return Found{Envelope: env, Line: lineNo, Offset: start}, nil
	}
	return Found{}, fmt.Errorf("event %s: not in %s: %w", id, path, ErrNoEvent)
}
