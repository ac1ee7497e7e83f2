package netproxy

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

// TestCopyChunked: a chunked body is re-framed exactly to its end (bytes
// after the last chunk, such as a smuggled second request, never reach
// the server), and a malformed one is refused.
func TestCopyChunked(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"3\r\nabc\r\n0\r\n\r\n", "3\r\nabc\r\n0\r\n\r\n", true},
		{"3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-Trailer: y\r\n\r\nGET /admin HTTP/1.1\r\n\r\n", "3\r\nabc\r\na\r\n0123456789\r\n0\r\n\r\n", true},
		{"0\r\n\r\n", "0\r\n\r\n", true},
		{"3\nabc\r\n0\r\n\r\n", "", false},              // bare LF
		{"3\r\nabcd\r\n0\r\n\r\n", "", false},           // data longer than its size
		{"-1\r\n\r\n", "", false},                       // negative
		{"+3\r\nabc\r\n0\r\n\r\n", "", false},           // sign
		{"0x3\r\nabc\r\n0\r\n\r\n", "", false},          // prefix
		{"fffffffffffffffff\r\n", "", false},            // overflow
		{"3\r\nab", "", false},                          // cut short
		{strings.Repeat("0", 5000) + "\r\n", "", false}, // overlong size line
	} {
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		err := copyChunked(w, bufio.NewReader(strings.NewReader(c.in)))
		w.Flush()
		if (err == nil) != c.ok {
			t.Errorf("copyChunked(%q) = %v; want ok %v", c.in, err, c.ok)
			continue
		}
		if c.ok && out.String() != c.want {
			t.Errorf("copyChunked(%q) wrote %q; want %q", c.in, out.String(), c.want)
		}
	}
}

// FuzzCopyChunked: whatever comes in, what goes out is a well-formed
// chunked body ending at its last chunk, or an error.
func FuzzCopyChunked(f *testing.F) {
	for _, s := range []string{"3\r\nabc\r\n0\r\n\r\n", "0\r\n\r\n", "1;x\r\na\r\n0\r\nT: v\r\n\r\nrest", "z\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		if err := copyChunked(w, bufio.NewReader(strings.NewReader(in))); err != nil {
			return
		}
		w.Flush()
		// Decoding what was written again gives the same bytes, and it ends
		// with the last chunk.
		var again bytes.Buffer
		w2 := bufio.NewWriter(&again)
		if err := copyChunked(w2, bufio.NewReader(bytes.NewReader(out.Bytes()))); err != nil {
			t.Fatalf("re-reading %q: %v", out.String(), err)
		}
		w2.Flush()
		if again.String() != out.String() || !strings.HasSuffix(out.String(), "0\r\n\r\n") {
			t.Fatalf("not a fixed point: %q -> %q", out.String(), again.String())
		}
	})
}
