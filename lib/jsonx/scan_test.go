package jsonx

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestScannerStringModes(t *testing.T) {
	tests := []struct {
		in   string
		mode StringMode
		want string // "!kind" for an error
	}{
		{`"plain"`, StrictStrings, "plain"},
		{`"a\"b\\c\/d\b\f\n\r\t"`, StrictStrings, "a\"b\\c/d\b\f\n\r\t"},
		{`"\u00e9\ud83d\ude00"`, StrictStrings, "é😀"},
		{"\"\xff\"", StrictStrings, "!invalid"},
		{"\"\xff\"", ReplaceSurrogates, "!invalid"},
		{"\"a\xffb\"", ReplaceInvalid, "a\uFFFDb"},
		{"\"a\xffb\"", KeepInvalid, "a\xffb"},
		{`"\ud800"`, StrictStrings, "!surrogate"},
		{`"\ud800\u0041"`, ReplaceSurrogates, "\uFFFDA"},
		{`"\udc00"`, ReplaceInvalid, "\uFFFD"},
		{`"\ud800x"`, KeepInvalid, "\xed\xa0\x80x"},
		{"\"a\x01\"", KeepInvalid, "!control"},
		{`"\x"`, KeepInvalid, "!escape"},
		{`"\u12"`, KeepInvalid, "!unicode"},
		{`"abc`, KeepInvalid, "!unterminated"},
		{`"ab\`, KeepInvalid, "!unterminated"},
	}
	kinds := map[string]SyntaxKind{"!invalid": ErrInvalidUTF8, "!surrogate": ErrLoneSurrogate, "!control": ErrControl,
		"!escape": ErrEscape, "!unicode": ErrUnicodeEscape, "!unterminated": ErrUnterminated}
	for _, tt := range tests {
		s := NewScanner([]byte(tt.in))
		s.Strings = tt.mode
		got, err := s.String()
		if k, isErr := kinds[tt.want]; isErr {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Kind != k {
				t.Errorf("String(%q, mode %d) = %q, %v; want a %s error", tt.in, tt.mode, got, err, tt.want)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("String(%q, mode %d) = %q, %v; want %q", tt.in, tt.mode, got, err, tt.want)
		}
		if err := s.End(); err != nil {
			t.Errorf("String(%q) left %v", tt.in, err)
		}
	}
}

// TestScannerKeySurvivesValue: a member name decoded from escapes stays
// intact while its value's strings are decoded into the same scanner.
func TestScannerKeySurvivesValue(t *testing.T) {
	s := NewScanner([]byte(`{"k\u0065y":"v\u0061lue","x":["\u0041","\u0042"]}`))
	var got []string
	err := s.Object(func(key []byte) error {
		k := string(key)
		if _, err := s.Skip(8); err != nil {
			return err
		}
		got = append(got, k+"="+string(key))
		return nil
	})
	if err != nil || strings.Join(got, ",") != "key=key,x=x" {
		t.Errorf("keys %q, %v; want key=key,x=x", got, err)
	}
}

func TestScannerIntegers(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"12", 12, true}, {"-7", -7, true}, {"9223372036854775807", 1<<63 - 1, true},
		{"-0", 0, false}, {"01", 0, false}, {"1.0", 0, false}, {"1e3", 0, false}, {"9223372036854775808", 0, false}, {"", 0, false},
	} {
		s := NewScanner([]byte(tt.in))
		n, ok := s.Int64()
		if ok != tt.ok || n != tt.want {
			t.Errorf("Int64(%q) = %d, %v; want %d, %v", tt.in, n, ok, tt.want, tt.ok)
		}
	}
	if s := NewScanner([]byte("2147483648")); func() bool { _, ok := s.Int(); return ok }() {
		t.Error("Int accepts 2^31")
	}
}

func TestIsNumber(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "1.5e-3": true, "2E+10": true, "123": true,
		"": false, "-": false, "01": false, "1.": false, ".5": false, "1e": false, "0x1p3": false,
		"Inf": false, "NaN": false, "1_000": false, " 1": false, "+1": false,
	} {
		if IsNumber(s) != want {
			t.Errorf("IsNumber(%q) = %v; want %v", s, !want, want)
		}
	}
}

func TestScannerDepth(t *testing.T) {
	deep := func(n int) []byte { return []byte(strings.Repeat("[", n) + strings.Repeat("]", n)) }
	s := NewScanner(deep(4))
	if _, err := s.Skip(3); err != nil {
		t.Errorf("4 arrays within depth 3 below the first: %v", err)
	}
	s = NewScanner(deep(5))
	var se *SyntaxError
	if _, err := s.Skip(3); !errors.As(err, &se) || se.Kind != ErrDepth {
		t.Errorf("5 arrays, depth 3: %v; want ErrDepth", err)
	}
}

// FuzzScanner: Skip accepts exactly what encoding/json calls valid (reading
// strings as it does), a string reads as encoding/json decodes it, and the
// strict modes refuse only what is not Unicode.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e3,true,false,null,"x\"\u00e9"]}`, `"\ud800\u0041"`, "\"\xff\"", `[1,]`, `{"a" 1}`, `01`, `-`, `"\u12"`, ` [ ] `, `{"a":{}}x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s := NewScanner([]byte(in))
		s.Strings = ReplaceInvalid
		_, err := s.Skip(1000)
		if err == nil {
			err = s.End()
		}
		if valid := json.Valid([]byte(in)); (err == nil) != valid && strings.Count(in, "[")+strings.Count(in, "{") < 1000 {
			t.Fatalf("Skip(%q) = %v; json.Valid says %v", in, err, valid)
		}
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(in) {
				t.Fatalf("Skip(%q) error %v is not a SyntaxError within the input", in, err)
			}
		}
		var want string
		if json.Unmarshal([]byte(in), &want) != nil {
			return
		}
		s = NewScanner([]byte(in))
		s.Strings = ReplaceInvalid
		got, err := s.String()
		if err != nil || string(got) != want {
			t.Fatalf("String(%q) = %q, %v; encoding/json reads %q", in, got, err, want)
		}
		for _, mode := range []StringMode{StrictStrings, ReplaceSurrogates, KeepInvalid} {
			s = NewScanner([]byte(in))
			s.Strings = mode
			got, err := s.String()
			switch {
			case err == nil && mode != KeepInvalid && !utf8.Valid(got):
				t.Fatalf("String(%q, mode %d) = %q: not UTF-8", in, mode, got)
			case err == nil && utf8.Valid(got) && string(got) != want && !strings.Contains(want, "\uFFFD"):
				t.Fatalf("String(%q, mode %d) = %q; want %q", in, mode, got, want)
			case err != nil && !strings.Contains(want, "\uFFFD"):
				t.Fatalf("String(%q, mode %d) refused a string of valid Unicode: %v", in, mode, err)
			}
		}
	})
}

func TestParseUint(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"7", 7, true}, {"1234567890123456789", 1234567890123456789, true},
		{"18446744073709551615", 1<<64 - 1, true}, {"18446744073709551616", 0, false}, {"99999999999999999999", 0, false},
		{"", 0, false}, {"00", 0, false}, {"01", 0, false}, {"-1", 0, false}, {"1a", 0, false}, {"123456789012345678901", 0, false},
	} {
		if n, ok := ParseUint([]byte(tt.in)); n != tt.want || ok != tt.ok {
			t.Errorf("ParseUint(%q) = %d, %v; want %d, %v", tt.in, n, ok, tt.want, tt.ok)
		}
	}
}
