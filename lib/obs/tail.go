package obs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
)

// TailOptions select what Tail prints.
type TailOptions struct {
	Subject string        // only this subject's records ("" for all)
	Lines   int           // how many of the last matching records to print first
	Follow  bool          // then keep printing records as they are appended
	Poll    time.Duration // how often Follow looks for growth (default 200ms)
}

// Tail calls out with the last o.Lines complete records of the JSONL file at
// path (filtered by subject), oldest first, then with Follow every complete
// record appended after, until ctx ends. It reads backwards in chunks, so
// the cost does not grow with the file. A record still being written (no
// newline yet) is printed once complete. It takes no lock: appenders write
// whole records with one write(2).
func Tail(ctx context.Context, path string, o TailOptions, out func(line []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		code := exitcode.Internal
		if errors.Is(err, os.ErrNotExist) {
			code = exitcode.NotFound
		}
		return exitcode.Wrap(code, fmt.Errorf("tail: %w", err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return exitcode.Wrap(exitcode.Internal, fmt.Errorf("tail: %w", err))
	}
	if !st.Mode().IsRegular() {
		return exitcode.Wrap(exitcode.Refused, fmt.Errorf("tail %s: %w", path, ErrNotRegular))
	}
	match := func(line []byte) bool {
		if o.Subject == "" {
			return true
		}
		_, s, _, ok := peek(line)
		return ok && s == o.Subject
	}
	// offset: the end of the last complete record.
	offset, err := lastRecords(f, st.Size(), o.Lines, match, out)
	if err != nil || !o.Follow {
		return err
	}
	poll := o.Poll
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	var pending []byte
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
		st, err := f.Stat()
		if err != nil {
			return exitcode.Wrap(exitcode.Internal, fmt.Errorf("tail: %w", err))
		}
		size := st.Size()
		if size < offset+int64(len(pending)) {
			// Truncated: a torn record was cut, or the file was emptied.
			offset, pending = min(offset, size), nil
		}
		if size == offset+int64(len(pending)) {
			continue
		}
		buf := make([]byte, size-offset-int64(len(pending)))
		n, err := f.ReadAt(buf, offset+int64(len(pending)))
		if err != nil && err != io.EOF {
			return exitcode.Wrap(exitcode.Internal, fmt.Errorf("tail: %w", err))
		}
		pending = append(pending, buf[:n]...)
		for {
			nl := bytes.IndexByte(pending, '\n')
			if nl < 0 {
				break
			}
			line := pending[:nl]
			if match(line) {
				if err := out(line); err != nil {
					return err
				}
			}
			offset += int64(nl + 1)
			pending = pending[nl+1:]
		}
		pending = slices.Clone(pending)
	}
}

// lastRecords prints the last n matching complete records and returns the
// end offset of the last complete record.
func lastRecords(f *os.File, size int64, n int, match func([]byte) bool, out func([]byte) error) (int64, error) {
	const chunk = 64 << 10
	pos := size
	var carry []byte // bytes after pos not yet split into lines
	var found [][]byte
	end := int64(-1)
	for pos > 0 && (len(found) < n || end < 0) {
		k := min(chunk, pos)
		pos -= k
		buf := make([]byte, k, k+int64(len(carry)))
		if _, err := f.ReadAt(buf, pos); err != nil && err != io.EOF {
			return 0, exitcode.Wrap(exitcode.Internal, fmt.Errorf("tail: %w", err))
		}
		buf = append(buf, carry...)
		if end < 0 {
			if nl := bytes.LastIndexByte(buf, '\n'); nl >= 0 {
				end = pos + int64(nl) + 1
				buf = buf[:nl+1] // drop a record still being written
			} else {
				carry = buf
				continue
			}
		}
		// buf holds whole lines after its first newline (or all of it at 0).
		lines := bytes.Split(bytes.TrimSuffix(buf, []byte{'\n'}), []byte{'\n'})
		first := 0
		if pos > 0 {
			first = 1 // the first piece may be the tail of an earlier line
			carry = slices.Clone(lines[0])
			carry = append(carry, '\n')
		} else {
			carry = nil
		}
		for i := len(lines) - 1; i >= first && len(found) < n; i-- {
			if match(lines[i]) {
				found = append(found, slices.Clone(lines[i]))
			}
		}
	}
	if end < 0 {
		end = 0
	}
	for i := len(found) - 1; i >= 0; i-- {
		if err := out(found[i]); err != nil {
			return 0, err
		}
	}
	return end, nil
}
