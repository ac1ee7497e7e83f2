package execx

import (
	"fmt"
	"io"
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

// tail returns the ring's contents in write order.
func (c *capture) tail() []byte {
	if !c.full {
		return c.ring[:c.pos]
	}
	out := make([]byte, 0, len(c.ring))
	out = append(out, c.ring[c.pos:]...)
	return append(out, c.ring[:c.pos]...)
}

// output returns what was kept — everything if it fit, else head, a marker
// saying how many bytes were left out, and tail, together at most limit
// bytes — and whether anything was left out. Cuts are moved to UTF-8
// boundaries so the JSON string does not gain replacement characters at
// the seams.
func (c *capture) output() (string, bool) {
	if c.total <= int64(c.limit) {
		return string(append(c.head[:len(c.head):len(c.head)], c.tail()...)), false
	}
	tail := c.tail()
	// The marker carries the omitted count, at most total: size the room
	// for the widest marker so head+marker+tail never exceeds limit.
	room := c.limit - len(omitted(c.total))
	if room < 0 {
		room = 0
	}
	h := min(len(c.head), room/2)
	t := min(len(tail), room-h)
	head := trimRuneEnd(c.head[:h])
	tl := trimRuneStart(tail[len(tail)-t:])
	marker := omitted(c.total - int64(len(head)) - int64(len(tl)))
	if len(head)+len(marker)+len(tl) > c.limit {
		return string(head) + string(tl), true // limit smaller than a marker
	}
	return string(head) + marker + string(tl), true
}

func omitted(n int64) string { return fmt.Sprintf("\n[artexec: %d bytes omitted]\n", n) }

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

// trimRuneStart drops continuation bytes at the start of b.
func trimRuneStart(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && i < len(b); i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}
