package execx

import (
	"bytes"
	"math/rand/v2"
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
// stream, within the limit, and the count is exact.
func TestCaptureMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 300 {
		limit := int64(1 + rng.IntN(300))
		var all bytes.Buffer
		c := newCapture(limit, nil)
		for range rng.IntN(40) {
			chunk := make([]byte, rng.IntN(int(limit)*2+1))
			for i := range chunk {
				chunk[i] = byte('a' + rng.IntN(26))
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
		i := strings.Index(out, "\n[artexec: ")
		if i < 0 {
			// Only a limit too small for any marker may drop it, and
			// then nothing is kept.
			if limit >= int64(len(omitted(int64(len(data))))) || out != "" || n != int64(len(data)) {
				t.Fatalf("iter %d: no marker in %q (limit %d, %d omitted)", iter, out, limit, n)
			}
			continue
		}
		j := strings.Index(out[i:], " bytes omitted]\n") + i + len(" bytes omitted]\n")
		head, tail := out[:i], out[j:]
		if !strings.HasPrefix(data, head) || !strings.HasSuffix(data, tail) {
			t.Fatalf("iter %d: head/tail %q/%q not the stream's", iter, head, tail)
		}
		if k := int64(len(data) - len(head) - len(tail)); out[i:j] != omitted(k) || n != k {
			t.Fatalf("iter %d: marker %q, %d omitted; want %q", iter, out[i:j], n, omitted(k))
		}
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
	c = newCapture(int64(len(omitted(1000)))+2, nil) // room 2: one head byte, one tail byte
	c.Write(bytes.Repeat([]byte("é"), 500))
	out, n := c.output()
	if int64(len(out)) > c.total || len(out) > c.limit || !utf8.ValidString(out) || n != c.total-int64(len(out)-len(omitted(n))) {
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
