package obs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs/redact"
)

// Finding is one problem Verify found in a JSONL sink.
type Finding struct {
	Line    int    `json:"line"`
	Offset  int64  `json:"offset"`
	Problem string `json:"problem"`
	ID      string `json:"id,omitempty"`
	Subject string `json:"subject,omitempty"`
	Message string `json:"message"`
}

// Problems Verify reports, one word each.
const (
	ProblemTorn         = "torn"          // the last record has no newline: a writer died mid-write
	ProblemTooLong      = "too-long"      // a line longer than any record can be
	ProblemCorrupt      = "corrupt"       // not a valid envelope
	ProblemVersion      = "version"       // an apiVersion this build does not read
	ProblemIDMismatch   = "id-mismatch"   // the id is not the hash of the content: tampered with
	ProblemNotCanonical = "not-canonical" // valid, but not the canonical bytes a sink writes
	ProblemUnredacted   = "unredacted"    // holds values redaction would remove
	ProblemDuplicate    = "duplicate"     // an id seen before
	ProblemOrder        = "order"         // a seq not above the subject's previous one
	ProblemGap          = "gap"           // a seq skipping numbers of its subject
)

// Report is the result of Verify.
type Report struct {
	Path     string `json:"path"`
	Records  int    `json:"records"`  // records that parsed as envelopes
	Subjects int    `json:"subjects"` // distinct subjects among them
	Findings int    `json:"findings"`
	OK       bool   `json:"ok"`
}

// Verify reads a JSONL sink from r and calls found for every problem: each
// line must be a canonical envelope whose id is the hash of its content,
// which redaction would leave unchanged, whose id was not seen before, and
// whose seq is exactly one more than its subject's previous one (a
// subject's first seq may be anything: a sink can start mid-stream). It
// returns an error only when r cannot be read.
func Verify(r io.Reader, name string, red *redact.Redactor, found func(Finding)) (Report, error) {
	rep := Report{Path: name}
	br := bufio.NewReaderSize(r, 1<<16)
	ids := map[digest]int{}
	last := map[string]uint64{}
	var off int64
	add := func(f Finding) {
		rep.Findings++
		if found != nil {
			found(f)
		}
	}
	for lineNo := 1; ; lineNo++ {
		line, n, tooLong, err := readLine(br, MaxDraftBytes)
		if n == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			return rep, exitcode.Wrap(exitcode.Internal, fmt.Errorf("verify %s: %w", name, err))
		}
		start := off
		off += n
		torn := err == io.EOF // no newline at the end
		switch {
		case tooLong:
			add(Finding{Line: lineNo, Offset: start, Problem: ProblemTooLong, Message: fmt.Sprintf("line longer than %d bytes", MaxDraftBytes)})
			continue
		case torn:
			add(Finding{Line: lineNo, Offset: start, Problem: ProblemTorn, Message: fmt.Sprintf("last record has no newline (%d bytes): a writer died mid-write; the next appender truncates it", len(line))})
			continue
		}
		env, canonical, perr := ParseEnvelope(line)
		if perr != nil {
			f := Finding{Line: lineNo, Offset: start, Problem: ProblemCorrupt, Message: perr.Error()}
			var fe *jsonx.FieldError
			switch {
			case errors.Is(perr, ErrIDMismatch):
				// Well-formed but altered: its claimed seq still counts, so
				// one altered record is one finding, not a cascade of gaps.
				f.Problem = ProblemIDMismatch
				var seq uint64
				var ok bool
				if _, f.Subject, seq, ok = peek(line); ok && seq > last[f.Subject] {
					last[f.Subject] = seq
				}
			case errors.As(perr, &fe) && fe.Path == "event.apiVersion" && bytes.HasPrefix(line, []byte(`{"apiVersion":"`)):
				f.Problem = ProblemVersion
			}
			add(f)
			continue
		}
		rep.Records++
		f := Finding{Line: lineNo, Offset: start, ID: env.id, Subject: env.subject}
		if !canonical {
			f.Problem, f.Message = ProblemNotCanonical, "record is not in canonical form"
			add(f)
		}
		if red != nil {
			if err := CheckRedacted(red, env); err != nil {
				f.Problem, f.Message = ProblemUnredacted, err.Error()
				add(f)
			}
		}
		d, _ := digestOf(env.id)
		if first, dup := ids[d]; dup {
			f.Problem, f.Message = ProblemDuplicate, "same id as line "+strconv.Itoa(first)
			add(f)
			continue
		}
		ids[d] = lineNo
		prev, seen := last[env.subject]
		switch {
		case seen && env.seq <= prev:
			f.Problem, f.Message = ProblemOrder, fmt.Sprintf("seq %d after seq %d of the same subject", env.seq, prev)
			add(f)
		case seen && env.seq > prev+1:
			f.Problem, f.Message = ProblemGap, fmt.Sprintf("seq %d follows seq %d: %d event(s) of the subject missing", env.seq, prev, env.seq-prev-1)
			add(f)
		}
		if env.seq > prev {
			last[env.subject] = env.seq
		}
	}
	rep.Subjects = len(last)
	rep.OK = rep.Findings == 0
	return rep, nil
}

// VerifyFile is Verify on the file at path (not found: exit 4).
func VerifyFile(path string, red *redact.Redactor, found func(Finding)) (Report, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Report{Path: path}, exitcode.Wrap(exitcode.NotFound, fmt.Errorf("verify: %w", err))
		}
		return Report{Path: path}, exitcode.Wrap(exitcode.Internal, fmt.Errorf("verify: %w", err))
	}
	defer f.Close()
	return Verify(f, path, red, found)
}

// readLine reads one line without its newline; n counts the bytes consumed
// (newline included). A line longer than limit is consumed and reported as
// tooLong (its bytes are not returned). err is io.EOF when the input ended
// without a newline.
func readLine(br *bufio.Reader, limit int) (line []byte, n int64, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		n += int64(len(chunk))
		if !tooLong {
			if len(buf)+len(chunk) > limit+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return buf, n, tooLong, err
		}
		return buf[:max(0, len(buf)-1)], n, tooLong, nil
	}
}
