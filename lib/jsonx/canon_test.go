package jsonx

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/art-runtime/art/lib/exitcode"
)

// TestCanonicalRFC8785 checks the examples of RFC 8785 §3.2.2 (values and
// escaping) and §3.2.3 (UTF-16 sort order) byte for byte.
func TestCanonicalRFC8785(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"values and escaping",
			`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`,
			`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		{"utf-16 sort order",
			`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{"whitespace removed", " [ 1 , { } , [ ] , \"\" ] ", `[1,{},[],""]`},
		{"no HTML escaping, DEL and U+2028 literal", `"<a>&\u007f\u2028"`, "\"<a>&\u007f\u2028\""},
	}
	for _, tt := range tests {
		got, err := Canonical([]byte(tt.in))
		if err != nil {
			t.Errorf("%s: Canonical = %v", tt.name, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("%s: Canonical(%s)\n got %s\nwant %s", tt.name, tt.in, got, tt.want)
		}
	}
}

// TestCanonicalNumbersRFC8785 is RFC 8785 Appendix B: IEEE 754 bit patterns
// and their ECMAScript serialisation.
func TestCanonicalNumbersRFC8785(t *testing.T) {
	tests := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tt := range tests {
		got, err := AppendCanonicalNumber(nil, math.Float64frombits(tt.bits))
		if err != nil || string(got) != tt.want {
			t.Errorf("AppendCanonicalNumber(%#016x) = %s, %v; want %s", tt.bits, got, err, tt.want)
		}
	}
	for _, bits := range []uint64{0x7fffffffffffffff, 0x7ff0000000000000, 0xfff0000000000000} {
		if got, err := AppendCanonicalNumber(nil, math.Float64frombits(bits)); err == nil {
			t.Errorf("AppendCanonicalNumber(%#016x) = %s; want an error (not finite)", bits, got)
		}
	}
}

// TestCanonicalNumbersOracle compares thousands of doubles (random bit
// patterns and decimal-looking values around the notation switch points)
// with Node's Number::toString, recorded by testdata/canon/gen.js.
func TestCanonicalNumbersOracle(t *testing.T) {
	f, err := os.Open("testdata/canon/numbers.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		hexBits, want, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("bad oracle line %q", sc.Text())
		}
		bits, err := strconv.ParseUint(hexBits, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendCanonicalNumber(nil, math.Float64frombits(bits))
		if err != nil || string(got) != want {
			t.Errorf("AppendCanonicalNumber(%s) = %s, %v; want %s", hexBits, got, err, want)
		}
		// The literal Node wrote must parse back to the same canonical text.
		back, err := Canonical([]byte(want))
		if err != nil || string(back) != want {
			t.Errorf("Canonical(%s) = %s, %v; want it unchanged", want, back, err)
		}
		n++
	}
	if n < 5000 {
		t.Fatalf("oracle has %d numbers; want the full file", n)
	}
}

// TestCanonicalCasesOracle compares whole documents with the canonical form
// Node computes (JSON.stringify of primitives, keys sorted by code units).
func TestCanonicalCasesOracle(t *testing.T) {
	b, err := os.ReadFile("testdata/canon/cases.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		in, want, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("bad case line %q", line)
		}
		got, err := Canonical([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("Canonical(%s)\n got %s, %v\nwant %s", in, got, err, want)
		}
		again, err := Canonical(got)
		if err != nil || string(again) != string(got) {
			t.Errorf("Canonical is not idempotent on %s: %s, %v", got, again, err)
		}
	}
}

func TestCompareKeys(t *testing.T) {
	// Sorted by UTF-16 code units: U+10000 (surrogates D800 DC00) sorts
	// before U+E000 and U+FFFF although its code point is larger.
	want := []string{"", "\r", "1", "10", "A", "a", "ab", "\u0080", "\u00f6", "\u20ac", "\U00010000", "\U0001F600", "\ue000", "\ufb33", "\uffff"}
	got := slices.Clone(want)
	for i := range got { // reverse, then sort
		j := len(got) - 1 - i
		if i >= j {
			break
		}
		got[i], got[j] = got[j], got[i]
	}
	slices.SortFunc(got, CompareKeys)
	if !slices.Equal(got, want) {
		t.Errorf("sorted = %q; want %q", got, want)
	}
	for _, k := range want {
		if CompareKeys(k, k) != 0 {
			t.Errorf("CompareKeys(%q, itself) != 0", k)
		}
	}
}

func TestParseRefusals(t *testing.T) {
	tests := []struct {
		name, in string
		opt      ParseOptions
		want     string
	}{
		{"duplicate key", `{"a":{"b":1,"b":2}}`, ParseOptions{}, "doc.a.b: duplicate key"},
		{"trailing data", `{} {}`, ParseOptions{}, "doc: trailing data"},
		{"NaN literal", `{"a":NaN}`, ParseOptions{}, "doc.a: invalid JSON at byte 5"},
		{"infinite number", `{"a":[1,1e400]}`, ParseOptions{}, "doc.a[1]: number 1e400 is not finite"},
		{"beyond 2^53", `{"n":9007199254740993}`, ParseOptions{SafeIntegers: true}, "doc.n: integer 9007199254740993 is beyond"},
		{"beyond 2^53 negative", `[-9007199254740993]`, ParseOptions{SafeIntegers: true}, "doc[0]: integer -9007199254740993 is beyond"},
		{"huge integer", `[123456789012345678901234567890]`, ParseOptions{SafeIntegers: true}, "doc[0]: integer"},
		{"invalid utf-8", "{\"a\":\"\xff\"}", ParseOptions{}, "doc.a: string is not valid UTF-8"},
		{"lone surrogate", `{"a":"\ud800"}`, ParseOptions{}, `doc.a: string has a lone surrogate \ud800`},
		{"too deep", strings.Repeat("[", 6) + strings.Repeat("]", 6), ParseOptions{MaxDepth: 5}, "nesting deeper than 5"},
		{"control char", "\"a\x01\"", ParseOptions{}, "control character"},
		{"bad escape", `"\x"`, ParseOptions{}, `invalid escape \x`},
		{"leading zero", `01`, ParseOptions{}, "trailing data"},
		{"bare minus", `-x`, ParseOptions{}, "invalid number"},
		{"unterminated", `{"a":"b`, ParseOptions{}, "unexpected end of input"},
		{"empty", ``, ParseOptions{}, "unexpected end of input"},
		{"missing colon", `{"a" 1}`, ParseOptions{}, "expected ':'"},
		{"non-string key", `{1:2}`, ParseOptions{}, "expected a string key"},
		{"trailing comma", `[1,]`, ParseOptions{}, "unexpected character"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.in), "doc", tt.opt)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Parse(%q) = %v; want error containing %q", tt.name, tt.in, err, tt.want)
			continue
		}
		if exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: exit code %d; want 2", tt.name, exitcode.Of(err))
		}
	}
}

func TestParseValues(t *testing.T) {
	v, err := Parse([]byte(`{"s":"a\u00e9\ud83d\ude00","n":[9007199254740992,-9007199254740992,1.5e300,1e20],"b":true,"z":null}`), "doc", ParseOptions{SafeIntegers: true})
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if m["s"] != "aé😀" {
		t.Errorf("s = %q", m["s"])
	}
	if n := m["n"].([]any); n[0] != json.Number("9007199254740992") || n[3] != json.Number("1e20") {
		t.Errorf("n = %v; want literals kept (2^53 exactly is safe; 1e20 is not an integer literal)", n)
	}
	if m["b"] != true || m["z"] != nil {
		t.Errorf("b, z = %v, %v", m["b"], m["z"])
	}
	// KeepInvalidUTF8 keeps raw bytes and lone surrogates as WTF-8.
	v, err = Parse([]byte("[\"a\xffb\",\"\\udc00\"]"), "doc", ParseOptions{KeepInvalidUTF8: true})
	if err != nil {
		t.Fatal(err)
	}
	a := v.([]any)
	if a[0] != "a\xffb" || a[1] != "\xed\xb0\x80" || utf8.ValidString(a[1].(string)) {
		t.Errorf("kept = %q; want raw invalid bytes", a)
	}
}

func TestAppendCanonicalValues(t *testing.T) {
	got, err := AppendCanonical(nil, map[string]any{
		"b": []any{int64(-3), uint64(7), float32(0.5), json.Number("1.0"), "x", nil, false},
		"a": map[string]any{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":{},"b":[-3,7,0.5,1,"x",null,false]}`; string(got) != want {
		t.Errorf("AppendCanonical = %s; want %s", got, want)
	}
	for _, bad := range []any{math.NaN(), int64(1) << 60, "\xff", struct{}{}, map[string]any{"\xff": 1}} {
		if got, err := AppendCanonical(nil, bad); err == nil {
			t.Errorf("AppendCanonical(%#v) = %s; want an error", bad, got)
		}
	}
	if n := CanonicalStringLen("a\"\n\x01é"); n != len(AppendCanonicalString(nil, "a\"\n\x01é")) {
		t.Errorf("CanonicalStringLen = %d; want %d", n, len(AppendCanonicalString(nil, "a\"\n\x01é")))
	}
}

// FuzzCanonical: anything Parse accepts canonicalises, the canonical form is
// a fixed point, and encoding/json agrees it is valid JSON with the same value.
func FuzzCanonical(f *testing.F) {
	f.Add(`{"numbers":[333333333.33333329,1E30,4.50,2e-3],"s":"\u20ac\u000f"}`)
	f.Add(`{"\ud83d\ude00":1,"\ufb33":2,"a":[true,false,null]}`)
	f.Add(`[1e-7,123e19,-0.0,"\ud800"]`)
	f.Fuzz(func(t *testing.T, in string) {
		c, err := Canonical([]byte(in))
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage && !strings.HasPrefix(err.Error(), "canonical JSON:") {
				t.Fatalf("Canonical(%q) error %v; want a usage error", in, err)
			}
			return
		}
		if !json.Valid(c) {
			t.Fatalf("Canonical(%q) = %q is not valid JSON", in, c)
		}
		again, err := Canonical(c)
		if err != nil || string(again) != string(c) {
			t.Fatalf("Canonical not a fixed point: %q -> %q, %v", c, again, err)
		}
	})
}

func BenchmarkCanonical(b *testing.B) {
	in := []byte(`{"apiVersion":"art/v1alpha1","kind":"Draft","subject":"task/0001","type":"task.finished","attrs":{"program":"go","exit_code":0,"duration_ms":1234.5,"status":"succeeded","isolation":{"backend":"landlock","enforced":["fs","net"]}}}`)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := Canonical(in); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzCanonicalString: the one string writer gives valid JSON of its length
// estimate, reading back as the string with each invalid byte as U+FFFD, and
// for valid UTF-8 exactly the canonical form of encoding/json's encoding.
func FuzzCanonicalString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c\b\f\n\r\t\x01\x1f\x7f", "é😀\u2028<>&", "a\xffb\xc3", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := AppendCanonicalString([]byte("x"), s)[1:]
		if n := CanonicalStringLen(s); n != len(out) {
			t.Fatalf("CanonicalStringLen(%q) = %d; the writer gave %d bytes", s, n, len(out))
		}
		var back string
		if err := json.Unmarshal(out, &back); err != nil || !utf8.Valid(out) {
			t.Fatalf("AppendCanonicalString(%q) = %q: not valid JSON of valid UTF-8 (%v)", s, out, err)
		}
		var want []byte
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			want = utf8.AppendRune(want, r) // RuneError for an invalid byte
			i += n
		}
		if back != string(want) {
			t.Fatalf("AppendCanonicalString(%q) reads back as %q; want %q", s, back, want)
		}
		if utf8.ValidString(s) {
			enc, _ := json.Marshal(s)
			canon, err := Canonical(enc)
			if err != nil || string(canon) != string(out) {
				t.Fatalf("AppendCanonicalString(%q) = %s; Canonical(%s) = %s, %v", s, out, enc, canon, err)
			}
		}
	})
}
