// Package words splits an operator's command string ('go test ./...') into
// argv words the way a POSIX shell splits words, without a shell: quotes and
// backslashes are honoured, and nothing is expanded.
//
// It refuses, rather than passes through literally, every character a shell
// would have given a meaning this splitter does not implement: unquoted
// operators (| & ; < > ( )), variables and command substitution ($, `), glob
// patterns (* ? [), a leading ~ and a leading #. An operator who writes
// "go test ./... && go vet ./..." gets an error naming the '&', not a go
// command called with "&&" as a package. Quote such characters to pass them
// as data, or put the pipeline in a script.
package words

import (
	"fmt"
	"strings"

	"github.com/art-runtime/art/lib/exitcode"
)

// SyntaxError says where and why a command string cannot be split. It
// carries exit code 2: the string is invalid input.
type SyntaxError struct {
	Offset int // byte offset in the input
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("at byte %d: %s", e.Offset, e.Msg) }

// ExitCode implements exitcode.Coder.
func (e *SyntaxError) ExitCode() int { return exitcode.Usage }

// Split returns the words of s. An empty or blank s gives no words and no
// error; callers that need a program check len(words) themselves.
func Split(s string) ([]string, error) {
	var (
		out    []string
		cur    strings.Builder
		inWord bool // a word has started (possibly empty, as in '')
	)
	end := func() {
		if inWord {
			out = append(out, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case 0:
			return nil, &SyntaxError{i, "NUL byte"}
		case ' ', '\t', '\n':
			end()
		case '\\':
			if i+1 == len(s) {
				return nil, &SyntaxError{i, "trailing backslash"}
			}
			i++
			if s[i] == '\n' { // line continuation
				continue
			}
			if s[i] == 0 {
				return nil, &SyntaxError{i, "NUL byte"}
			}
			cur.WriteByte(s[i])
			inWord = true
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, &SyntaxError{i, "unterminated single quote"}
			}
			lit := s[i+1 : i+1+j]
			if k := strings.IndexByte(lit, 0); k >= 0 {
				return nil, &SyntaxError{i + 1 + k, "NUL byte"}
			}
			cur.WriteString(lit)
			inWord = true
			i += j + 1
		case '"':
			j, err := doubleQuoted(s, i+1, &cur)
			if err != nil {
				return nil, err
			}
			inWord = true
			i = j
		case '|', '&', ';', '<', '>', '(', ')':
			return nil, &SyntaxError{i, fmt.Sprintf("unquoted %q: no shell runs these words; quote it or use a script", c)}
		case '$', '`':
			return nil, &SyntaxError{i, fmt.Sprintf("unquoted %q: variables and substitutions are not expanded; quote it with single quotes", c)}
		case '*', '?', '[':
			return nil, &SyntaxError{i, fmt.Sprintf("unquoted %q: glob patterns are not expanded; quote it", c)}
		case '~', '#':
			if !inWord {
				return nil, &SyntaxError{i, fmt.Sprintf("unquoted %q at the start of a word: not expanded; quote it", c)}
			}
			cur.WriteByte(c)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	end()
	return out, nil
}

// doubleQuoted consumes a double-quoted string whose body starts at i and
// returns the index of the closing quote. Inside, a backslash escapes only
// \ " $ ` and newline (removed), as in sh; $ and ` unescaped are refused.
func doubleQuoted(s string, i int, cur *strings.Builder) (int, error) {
	start := i - 1
	for ; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return i, nil
		case 0:
			return 0, &SyntaxError{i, "NUL byte"}
		case '$', '`':
			return 0, &SyntaxError{i, fmt.Sprintf("%q inside double quotes: variables and substitutions are not expanded; use single quotes or \\%c", c, c)}
		case '\\':
			if i+1 < len(s) {
				switch n := s[i+1]; n {
				case '\\', '"', '$', '`':
					cur.WriteByte(n)
					i++
					continue
				case '\n':
					i++
					continue
				}
			}
			cur.WriteByte(c)
		default:
			cur.WriteByte(c)
		}
	}
	return 0, &SyntaxError{start, "unterminated double quote"}
}

// Quote is the inverse of Split: Split(Quote(w)) returns w for any words
// without NUL bytes. Words made only of safe characters are left bare, so
// Quote([]string{"go", "test", "./..."}) is "go test ./...".
func Quote(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteWord(w))
	}
	return b.String()
}

func quoteWord(w string) string {
	if w == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(w); i++ {
		if !isSafe(w[i]) {
			safe = false
			break
		}
	}
	if safe && w[0] != '~' && w[0] != '#' {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

func isSafe(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-_./=:,+@%^~#", c) >= 0
}

// Command splits s into a program and its arguments. It refuses an empty
// command and a leading NAME=value word, which a shell would take as an
// environment assignment and which here would be taken as a program name.
func Command(s string) ([]string, error) {
	w, err := Split(s)
	if err != nil {
		return nil, err
	}
	if len(w) == 0 {
		return nil, &SyntaxError{0, "empty command"}
	}
	if name, _, ok := strings.Cut(w[0], "="); ok && name != "" && !strings.Contains(name, "/") {
		// The way out is the caller's: its field for environment variables
		// ("Env"), which the CLI words as its flag.
		return nil, exitcode.Fieldf(exitcode.Usage, "Env", w[0], "at byte 0: %q looks like an environment assignment: no shell runs these words; pass the variable with %s", w[0], exitcode.Ref("Env")).
			Because(&SyntaxError{0, fmt.Sprintf("%q looks like an environment assignment: no shell runs these words", w[0])})
	}
	return w, nil
}
