package execx

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCaptureFits(t *testing.T) {
	c := newCapture(16, nil)
	for _, s := range []string{"hello ", "", "world", "!!!!!"} {
		c.Write([]byte(s))
	}
	if out, omitted := c.output(); out != "hello world!!!!!" || omitted != 0 || c.total != 16 {
		t.Errorf("output() = %q, %d omitted (total %d); want everything, nothing omitted", out, omitted, c.total)
	}
}

// Whatever the write pattern, the output is head + marker + tail of the
// stream, within the limit, and the count is exact; with newlines in the
// stream, the head ends and the tail starts at a line boundary unless its
// window holds no line boundary at all.
func TestCaptureMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 600 {
		limit := int64(1 + rng.IntN(300))
		newlines := iter%2 == 1 // every other stream has lines
		var all bytes.Buffer
		c := newCapture(limit, nil)
		for range rng.IntN(40) {
			chunk := make([]byte, rng.IntN(int(limit)*2+1))
			for i := range chunk {
				chunk[i] = byte('a' + rng.IntN(26))
				if newlines && rng.IntN(8) == 0 {
					chunk[i] = '\n'
				}
			}
			all.Write(chunk)
			c.Write(chunk)
		}
		out, n := c.output()
		data := all.String()
		if c.total != int64(len(data)) {
			t.Fatalf("iter %d: total %d; want %d", iter, c.total, len(data))
		}
		if int64(len(data)) <= limit {
			if out != data || n != 0 {
				t.Fatalf("iter %d: fits but output() = %q, %d omitted", iter, out, n)
			}
			continue
		}
		if n <= 0 || int64(len(out)) > limit {
			t.Fatalf("iter %d: limit %d, %d bytes: output %d bytes, %d omitted", iter, limit, len(data), len(out), n)
		}
		end := strings.Index(out, " bytes omitted]\n")
		if end < 0 {
			// Only a limit too small for any marker may drop it, and
			// then nothing is kept.
			if limit >= int64(len(omitted(int64(len(data)), false))) || out != "" || n != int64(len(data)) {
				t.Fatalf("iter %d: no marker in %q (limit %d, %d omitted)", iter, out, limit, n)
			}
			continue
		}
		j := end + len(" bytes omitted]\n")
		tail := out[j:]
		hl := len(data) - int(n) - len(tail)
		if hl < 0 || hl > len(out) {
			t.Fatalf("iter %d: %d omitted cannot be: output %q", iter, n, out)
		}
		head := out[:hl]
		atLine := hl == 0 || head[hl-1] == '\n'
		if !strings.HasPrefix(data, head) || !strings.HasSuffix(data, tail) {
			t.Fatalf("iter %d: head/tail %q/%q not the stream's", iter, head, tail)
		}
		if out[hl:j] != omitted(n, atLine) {
			t.Fatalf("iter %d: marker %q; want %q", iter, out[hl:j], omitted(n, atLine))
		}
		if !atLine && strings.Contains(head, "\n") {
			t.Fatalf("iter %d: head %q ends mid-line though it holds a newline", iter, head)
		}
		if start := len(data) - len(tail); tail != "" && data[start-1] != '\n' && strings.Contains(tail[:len(tail)-1], "\n") {
			t.Fatalf("iter %d: tail %q starts mid-line though it holds a newline", iter, tail)
		}
	}
}

// seq's output cut to 100 bytes shows only numbers seq printed, whole, and
// the marker on a line of its own.
func TestCaptureWholeLines(t *testing.T) {
	var all strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&all, "%d\n", i)
	}
	c := newCapture(100, nil)
	c.Write([]byte(all.String()))
	out, n := c.output()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var marker int
	for i, l := range lines {
		if strings.HasPrefix(l, "[artexec: ") {
			marker = i
			if l != fmt.Sprintf("[artexec: %d bytes omitted]", n) {
				t.Errorf("marker line %q; want %d bytes omitted", l, n)
			}
			continue
		}
		v, err := strconv.Atoi(l)
		if err != nil || v < 1 || v > 1000 || (i < marker || marker == 0) && v != i+1 {
			t.Errorf("line %d %q is not a line seq printed there (output %q)", i, l, out)
		}
	}
	if marker == 0 || lines[len(lines)-1] != "1000" || len(out) > 100 {
		t.Errorf("output %q: want head lines, a marker line, tail lines ending in 1000, within 100 bytes", out)
	}
	if int64(len(out)-len(lines[marker])-1)+n != c.total {
		t.Errorf("kept %d + omitted %d != total %d", len(out)-len(lines[marker])-1, n, c.total)
	}
}

// A limit too small for the marker keeps nothing, and says so; a wrapped
// ring with no room for its tail contributes nothing (it once wrote
// itself whole).
func TestCaptureTinyLimit(t *testing.T) {
	c := newCapture(14, nil)
	c.Write(bytes.Repeat([]byte("x"), 425))
	if out, n := c.output(); out != "" || n != 425 {
		t.Errorf("limit 14, 425 bytes: output() = %q, %d omitted; want nothing kept, 425 omitted", out, n)
	}
	// The tail's only room is taken by continuation bytes: cut to zero.
	c = newCapture(int64(len(omitted(1000, false)))+2, nil) // room 2: one head byte, one tail byte
	c.Write(bytes.Repeat([]byte("é"), 500))
	out, n := c.output()
	if int64(len(out)) > c.total || len(out) > c.limit || !utf8.ValidString(out) || n != c.total-int64(len(out)-len(omitted(n, true))) {
		t.Errorf("output() = %q, %d omitted; want within %d bytes, valid UTF-8, exact count", out, n, c.limit)
	}
}

// Cuts never split a UTF-8 sequence.
func TestCaptureUTF8Seams(t *testing.T) {
	s := strings.Repeat("héllo wörld ✓ ", 200)
	for limit := int64(60); limit < 90; limit++ {
		c := newCapture(limit, nil)
		c.Write([]byte(s))
		out, _ := c.output()
		if !utf8.ValidString(out) {
			t.Errorf("limit %d: output %q is not valid UTF-8", limit, out)
		}
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, bytes.ErrTooLarge
}

// A failing stream is dropped after its first error; capture goes on.
func TestCaptureStreamFailure(t *testing.T) {
	fw := &failWriter{}
	c := newCapture(100, fw)
	c.Write([]byte("a"))
	c.Write([]byte("b"))
	if out, _ := c.output(); out != "ab" || fw.n != 1 {
		t.Errorf("output %q, stream writes %d; want ab and one write", out, fw.n)
	}
}

func BenchmarkCapture(b *testing.B) {
	c := newCapture(1<<20, nil)
	buf := bytes.Repeat([]byte("x"), 64<<10)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		c.Write(buf)
	}
}
