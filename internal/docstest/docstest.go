// Package docstest keeps the user documentation honest: it extracts the
// fenced shell blocks of README.md and docs/*.md so a test can run them, and
// it splits example command lines into the words a flag check needs.
//
// The convention every doc follows:
//
//   - a block whose info string is `sh` is runnable: a doc's `sh` blocks run
//     in order, as one `bash -e` script, in one fresh temporary directory,
//     with the built tools on PATH and git available;
//   - `sh norun` marks a block that cannot run there (it needs a model
//     server, a terminal, root-only setup or an outside service): it is not
//     run, but every art* command in it must use only flags that the tool's
//     --help lists;
//   - any other info string (`json`, `cron`, none) is not shell and is left
//     alone.
package docstest

import (
	"bufio"
	"strings"
)

// Block is one fenced block of a Markdown file.
type Block struct {
	Info string // the info string after the fence: "sh", "sh norun", "json", ""
	Line int    // 1-based line of the block's first content line
	Text string // the content, every line newline-terminated
}

// Runnable reports whether the block is run.
func (b Block) Runnable() bool { return b.Info == "sh" }

// NoRun reports whether the block is shell that is only flag-checked.
func (b Block) NoRun() bool {
	f := strings.Fields(b.Info)
	return len(f) == 2 && f[0] == "sh" && f[1] == "norun"
}

// Blocks returns the fenced blocks of a Markdown document in order. Fences
// are ``` or ~~~ runs of three or more at the start of a line; a block ends
// at a fence of the same character at least as long (CommonMark's rule).
func Blocks(md string) []Block {
	var out []Block
	var cur *Block
	var fence string
	var body strings.Builder
	sc := bufio.NewScanner(strings.NewReader(md))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if cur == nil {
			if f := fenceOf(trimmed); f != "" && len(line)-len(trimmed) < 4 {
				fence = f
				cur = &Block{Info: strings.TrimSpace(trimmed[len(f):]), Line: n + 1}
				body.Reset()
			}
			continue
		}
		if f := fenceOf(trimmed); f != "" && f[0] == fence[0] && len(f) >= len(fence) && strings.TrimSpace(trimmed[len(f):]) == "" {
			cur.Text = body.String()
			out = append(out, *cur)
			cur = nil
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	return out
}

func fenceOf(s string) string {
	for _, c := range []byte{'`', '~'} {
		n := 0
		for n < len(s) && s[n] == c {
			n++
		}
		if n >= 3 {
			return s[:n]
		}
	}
	return ""
}

// Command is one art* invocation found in a shell block.
type Command struct {
	Line  int      // 1-based line within the block where the command starts
	Tool  string   // "artq"
	Words []string // the words after the tool name, up to the end of the command
}

// Commands finds every invocation of one of tools in a shell block: lines
// are joined at trailing backslashes, comments are dropped, a line is split
// at |, ;, && and || (outside quotes), and a tool name also starts a new
// command inside another's arguments (artq enqueue -- artagent run …).
// A tool named by path (/usr/local/bin/artq) counts.
func Commands(block string, tools []string) []Command {
	isTool := map[string]bool{}
	for _, t := range tools {
		isTool[t] = true
	}
	var out []Command
	lines := strings.Split(block, "\n")
	for i := 0; i < len(lines); i++ {
		start := i + 1
		line := lines[i]
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, `\`) + " " + lines[i]
		}
		for _, seg := range segments(line) {
			var cur *Command
			for _, w := range seg {
				base := w
				if j := strings.LastIndexByte(w, '/'); j >= 0 {
					base = w[j+1:]
				}
				if isTool[base] {
					if cur != nil {
						out = append(out, *cur)
					}
					cur = &Command{Line: start, Tool: base}
					continue
				}
				if cur != nil {
					cur.Words = append(cur.Words, w)
				}
			}
			if cur != nil {
				out = append(out, *cur)
			}
		}
	}
	return out
}

// segments splits a shell line into the words of each simple command,
// honouring single and double quotes and dropping a # comment. It is a
// reader for examples, not a shell: expansions stay as written.
func segments(line string) [][]string {
	var segs [][]string
	var words []string
	var w strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	endSeg := func() {
		flush()
		if len(words) > 0 {
			segs = append(segs, words)
		}
		words = nil
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				j = len(line) - i - 1
			}
			w.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			j := i + 1
			for j < len(line) && line[j] != '"' {
				if line[j] == '\\' && j+1 < len(line) {
					j++
				}
				j++
			}
			w.WriteString(line[i+1 : min(j, len(line))])
			inWord = true
			i = j
		case c == '#' && !inWord:
			endSeg()
			return segs
		case c == ' ' || c == '\t':
			flush()
		case c == '|' || c == ';' || c == '&' || c == '(' || c == ')' || c == '<' || c == '>':
			endSeg()
			// a redirection's target is not a word of the command
			if c == '<' || c == '>' {
				for i+1 < len(line) && (line[i+1] == '>' || line[i+1] == '&' || line[i+1] == ' ') {
					i++
				}
				for i+1 < len(line) && line[i+1] != ' ' && line[i+1] != ';' && line[i+1] != '|' && line[i+1] != '&' {
					i++
				}
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	endSeg()
	return segs
}

// Flags returns the flag names a command's words use, up to a "--" that
// ends the tool's own flags: "--name" for long flags (any "=value" cut off)
// and "-x" for each letter of a short cluster.
func Flags(words []string) []string {
	var out []string
	for _, w := range words {
		if w == "--" {
			break
		}
		switch {
		case strings.HasPrefix(w, "--"):
			name, _, _ := strings.Cut(w, "=")
			out = append(out, name)
		case strings.HasPrefix(w, "-") && len(w) > 1 && !isNumber(w[1:]):
			out = append(out, w[:2])
		}
	}
	return out
}

func isNumber(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
