package words

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  \t\n ", nil},
		{"go test ./...", []string{"go", "test", "./..."}},
		{"  go   vet\t./... ", []string{"go", "vet", "./..."}},
		{`a 'b c' d`, []string{"a", "b c", "d"}},
		{`a "b c" d`, []string{"a", "b c", "d"}},
		{`'' ""`, []string{"", ""}},
		{`a''b`, []string{"ab"}},
		{`'it'\''s'`, []string{"it's"}},
		{`'$HOME *.go ` + "`x`" + `'`, []string{"$HOME *.go `x`"}},
		{`"a\"b\\c\$d\` + "`" + `e\nf"`, []string{"a\"b\\c$d`e\\nf"}},
		{`a\ b`, []string{"a b"}},
		{`a\*b \$x \;`, []string{"a*b", "$x", ";"}},
		{"a\\\nb", []string{"ab"}},
		{"\"a\\\nb\"", []string{"ab"}},
		{`go test -run 'Test.*' ./...`, []string{"go", "test", "-run", "Test.*", "./..."}},
		{`a~b c#d`, []string{"a~b", "c#d"}},
		{`'~' '#x'`, []string{"~", "#x"}},
		{"héllo 'wörld'", []string{"héllo", "wörld"}},
		{`x=1`, []string{"x=1"}},
	}
	for _, tt := range tests {
		got, err := Split(tt.in)
		if err != nil {
			t.Errorf("Split(%q) error %v", tt.in, err)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Split(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestSplitRefuses(t *testing.T) {
	tests := []struct {
		in     string
		offset int
		msg    string
	}{
		{`'abc`, 0, "unterminated single quote"},
		{`a "abc`, 2, "unterminated double quote"},
		{`abc\`, 3, "trailing backslash"},
		{"a\x00b", 1, "NUL byte"},
		{"'a\x00b'", 2, "NUL byte"},
		{"go test ./... && go vet", 14, `unquoted '&'`},
		{"a | b", 2, `unquoted '|'`},
		{"a; b", 1, `unquoted ';'`},
		{"a > f", 2, `unquoted '>'`},
		{"a <f", 2, `unquoted '<'`},
		{"(a)", 0, `unquoted '('`},
		{"echo $HOME", 5, `unquoted '$'`},
		{"echo `id`", 5, "unquoted '`'"},
		{`echo "$HOME"`, 6, `'$' inside double quotes`},
		{"ls *.go", 3, `unquoted '*'`},
		{"ls a?", 4, `unquoted '?'`},
		{"ls [ab]", 3, `unquoted '['`},
		{"cat ~/x", 4, `unquoted '~'`},
		{"go test # comment", 8, `unquoted '#'`},
	}
	for _, tt := range tests {
		got, err := Split(tt.in)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Split(%q) = %q, %v; want a SyntaxError", tt.in, got, err)
			continue
		}
		if se.Offset != tt.offset || !strings.Contains(se.Msg, tt.msg) {
			t.Errorf("Split(%q) error %q at %d; want %q at %d", tt.in, se.Msg, se.Offset, tt.msg, tt.offset)
		}
		if exitcode.Of(err) != exitcode.Usage {
			t.Errorf("Split(%q) exit code %d; want %d", tt.in, exitcode.Of(err), exitcode.Usage)
		}
	}
}

func TestCommand(t *testing.T) {
	if w, err := Command("go test ./..."); err != nil || !slices.Equal(w, []string{"go", "test", "./..."}) {
		t.Errorf("Command = %q, %v", w, err)
	}
	for _, in := range []string{"", "   ", "FOO=1 go test", "''"} {
		_, err := Command(in)
		if in == "''" {
			// An empty program word splits fine; execx refuses it later.
			if err != nil {
				t.Errorf("Command(%q) error %v", in, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("Command(%q) succeeded; want an error", in)
		}
	}
	if w, err := Command("./bin/x=y a"); err != nil || w[0] != "./bin/x=y" {
		t.Errorf("Command with a path containing '=' = %q, %v", w, err)
	}
}

func TestQuote(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{[]string{"go", "test", "./..."}, "go test ./..."},
		{[]string{"a b", "", "it's"}, `'a b' '' 'it'\''s'`},
		{[]string{"~", "#", "a~#"}, `'~' '#' a~#`},
		{[]string{"$x", "*"}, `'$x' '*'`},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %q; want %q", tt.in, got, tt.want)
		}
		back, err := Split(Quote(tt.in))
		if err != nil || !slices.Equal(back, tt.in) {
			t.Errorf("Split(Quote(%q)) = %q, %v", tt.in, back, err)
		}
	}
}

// FuzzSplit checks that Split never panics, that what it accepts survives a
// Quote round trip, and that it never yields a word with a NUL byte.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		"go test ./...", `a 'b c' "d\"e" f\ g`, `'unterminated`, `"x\`, "a\\\nb",
		`it'\''s`, "a && b", `"$x"`, "~ #", "''", "\x00", "héllo",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := Split(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(s) {
				t.Fatalf("Split(%q) error %v: want a SyntaxError with an offset in the input", s, err)
			}
			return
		}
		for _, word := range w {
			if strings.IndexByte(word, 0) >= 0 {
				t.Fatalf("Split(%q) yielded a word with a NUL byte", s)
			}
		}
		q := Quote(w)
		back, err := Split(q)
		if err != nil || !slices.Equal(back, w) {
			t.Fatalf("Split(%q) = %q; Split(Quote) of it = %q, %v", s, w, back, err)
		}
	})
}

// FuzzQuote checks Split(Quote(w)) == w for arbitrary words.
func FuzzQuote(f *testing.F) {
	f.Add("a", "b c", "")
	f.Add("it's", "~x", "#")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		in := []string{a, b, c}
		for _, w := range in {
			if strings.IndexByte(w, 0) >= 0 {
				return
			}
		}
		back, err := Split(Quote(in))
		if err != nil || !slices.Equal(back, in) {
			t.Fatalf("Split(Quote(%q)) = %q, %v (quoted %q)", in, back, err, Quote(in))
		}
	})
}
