package jsonx

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestHex4(t *testing.T) {
	tests := []struct {
		in   string
		want rune
		ok   bool
	}{
		{"0041", 'A', true},
		{"00e9rest", 'é', true},
		{"D83D", 0xD83D, true},
		{"abcF", 0xABCF, true},
		{"12", 0, false},
		{"12g4", 0, false},
	}
	for _, tt := range tests {
		r, ok := Hex4([]byte(tt.in))
		if r != tt.want || ok != tt.ok {
			t.Errorf("Hex4(%q) = %U, %v; want %U, %v", tt.in, r, ok, tt.want, tt.ok)
		}
	}
}

// TestSimpleEscape holds SimpleEscape to encoding/json's reading of every
// one-character escape.
func TestSimpleEscape(t *testing.T) {
	for c := 0; c < 256; c++ {
		var s string
		err := json.Unmarshal([]byte{'"', '\\', byte(c), '"'}, &s)
		b, ok := SimpleEscape(byte(c))
		if c == 'u' {
			if ok {
				t.Errorf("SimpleEscape('u') ok; \\u is not a one-character escape")
			}
			continue
		}
		if ok != (err == nil) || (ok && string(b) != s) {
			t.Errorf("SimpleEscape(%q) = %q, %v; encoding/json reads %q, %v", byte(c), b, ok, s, err)
		}
	}
}

// AppendString writes what encoding/json writes without HTML escaping.
func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\s/", "\b\f\n\r\t\x00\x1f\x7f", "<&>", "é€😀", "\u2028\u2029", "bad\xffutf8\xc3", "\xed\xa0\x80"} {
		checkAppendString(t, s)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"\\\n", "\u2028", "\xff", "<tag>"} {
		f.Add(s)
	}
	f.Fuzz(checkAppendString)
}

func checkAppendString(t *testing.T, s string) {
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	if got := string(AppendString([]byte("x"), s)) + "\n"; got != "x"+want.String() {
		t.Errorf("AppendString(%q) = %s; encoding/json: %s", s, got, want.String())
	}
}
