package execx

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// capture keeps the head and the tail of a stream in bounded memory and
// counts everything. It never refuses a write: the child's pipe must always
// be drained, or a chatty child would block on a full pipe and look hung.
//
// Memory is at most limit bytes however much is written: the first half
// goes to head, the rest cycles through a ring holding the most recent
// bytes. Both grow only as output arrives, so a quiet program costs no
// allocation of its output limit.
type capture struct {
	limit   int
	headMax int
	head    []byte
	ring    []byte // allocated (limit-headMax bytes) when head is full
	pos     int    // next write position in ring
	full    bool   // ring has wrapped at least once
	total   int64
	stream  io.Writer // live copy; dropped after its first error
}

func newCapture(limit int64, stream io.Writer) *capture {
	return &capture{limit: int(limit), headMax: int(limit / 2), stream: stream}
}

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if c.stream != nil {
		if _, err := c.stream.Write(p); err != nil {
			c.stream = nil
		}
	}
	if room := c.headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if c.ring == nil {
		c.ring = make([]byte, c.limit-c.headMax)
	}
	if len(c.ring) == 0 {
		return n, nil
	}
	if len(p) >= len(c.ring) {
		copy(c.ring, p[len(p)-len(c.ring):])
		c.pos, c.full = 0, true
		return n, nil
	}
	k := copy(c.ring[c.pos:], p)
	if k < len(p) {
		copy(c.ring, p[k:])
		c.full = true
	}
	c.pos = (c.pos + len(p)) % len(c.ring)
	if c.pos == 0 {
		c.full = true
	}
	return n, nil
}

// tailLen is how many bytes the ring holds.
func (c *capture) tailLen() int {
	if c.full {
		return len(c.ring)
	}
	return c.pos
}

// tailByte is byte i of the last n bytes held by the ring.
func (c *capture) tailByte(n, i int) byte {
	if !c.full {
		return c.ring[c.pos-n+i]
	}
	return c.ring[(c.pos-n+i+len(c.ring))%len(c.ring)]
}

// writeTail writes the last n bytes held by the ring, in write order.
func (c *capture) writeTail(b *strings.Builder, n int) {
	if n == 0 {
		return // a wrapped ring would otherwise be written whole below
	}
	if !c.full {
		b.Write(c.ring[c.pos-n : c.pos])
		return
	}
	start := (c.pos - n + len(c.ring)) % len(c.ring) // the oldest byte is at pos
	if start < c.pos {
		b.Write(c.ring[start:c.pos])
		return
	}
	b.Write(c.ring[start:])
	b.Write(c.ring[:c.pos])
}

// output returns what was kept — everything if it fit, else head, a marker
// saying how many bytes were left out, and tail, together at most limit
// bytes — and how many bytes of the stream it left out (0: none; the
// marker is not a byte of the stream).
//
// Cuts keep whole lines where lines exist: the head ends at its last
// newline, the tail starts just after a newline, and the marker is a line
// of its own, so the output never shows a line the program did not print
// (seq 1 1000 cut mid-number would show a "1" that was really "871"). A
// head or tail window with no newline in it (one very long line) is cut
// inside the line instead, at a UTF-8 boundary so the JSON string does not
// gain replacement characters at the seams. The string is built in one
// allocation: with a large limit it is the biggest of a run.
func (c *capture) output() (string, int64) {
	var b strings.Builder
	tlen := c.tailLen()
	if c.total <= int64(c.limit) {
		b.Grow(len(c.head) + tlen)
		b.Write(c.head)
		c.writeTail(&b, tlen)
		return b.String(), 0
	}
	// The marker carries the omitted count, at most total: size the room
	// for the widest marker so head+marker+tail never exceeds limit.
	room := c.limit - len(omitted(c.total, false))
	if room < 0 {
		room = 0
	}
	head := c.head[:min(len(c.head), room/2)]
	if i := bytes.LastIndexByte(head, '\n'); i >= 0 {
		head = head[:i+1]
	} else {
		head = trimRuneEnd(head)
	}
	t := min(tlen, room-len(head))
	t = c.lineStart(t, tlen)
	n := c.total - int64(len(head)) - int64(t) // > 0: head+t <= limit < total
	marker := omitted(n, len(head) == 0 || head[len(head)-1] == '\n')
	if len(head)+len(marker)+t > c.limit {
		marker = "" // limit smaller than a marker
	}
	b.Grow(len(head) + len(marker) + t)
	b.Write(head)
	b.WriteString(marker)
	c.writeTail(&b, t)
	return b.String(), n
}

// lineStart shrinks a tail of t bytes (of the tlen the ring holds) so it
// starts at the beginning of a line: it already does when the byte before
// it is a newline; else it starts after its first newline, unless that is
// its last byte or there is none (a line longer than the window), when it
// only moves to a UTF-8 boundary.
func (c *capture) lineStart(t, tlen int) int {
	if t == 0 || (t < tlen && c.tailByte(t+1, 0) == '\n') {
		return t
	}
	for k := 0; k < t-1; k++ {
		if c.tailByte(t, k) == '\n' {
			return t - k - 1
		}
	}
	for k := 0; k < utf8.UTFMax && t > 0 && !utf8.RuneStart(c.tailByte(t, 0)); k++ {
		t--
	}
	return t
}

// omitted is the marker line for n left-out bytes; it starts with a newline
// of its own unless what precedes it already ended a line.
func omitted(n int64, atLineStart bool) string {
	if atLineStart {
		return fmt.Sprintf("[artexec: %d bytes omitted]\n", n)
	}
	return fmt.Sprintf("\n[artexec: %d bytes omitted]\n", n)
}

// trimRuneEnd drops a multi-byte sequence cut short at the end of b.
func trimRuneEnd(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		r := b[len(b)-i]
		if r < utf8.RuneSelf {
			return b
		}
		if utf8.RuneStart(r) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// capped passes the first limit bytes written to w and counts every byte.
// Like capture it never refuses a write, so the pipe behind it is always
// drained whatever w does; a failing w is dropped, and what it did not
// take is counted as not passed.
type capped struct {
	w      io.Writer
	limit  int64
	total  int64 // every byte written
	passed int64 // bytes w accepted
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if c.w == nil || c.passed >= c.limit {
		return n, nil
	}
	k := min(int64(n), c.limit-c.passed)
	m, err := c.w.Write(p[:k])
	c.passed += int64(max(0, min(m, int(k))))
	if err != nil {
		c.w = nil
	}
	return n, nil
}
