package cli

import (
	"errors"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/art-runtime/art/lib/exitcode"
)

// HelpCmd is the `help` subcommand every tool gets: `TOOL help status` is
// `TOOL status --help`, so a user who types help as a word is answered
// rather than refused.
type HelpCmd struct {
	Command []string `arg:"" optional:"" help:"The command to show help for."`
}

// Run prints the help of the named command (the tool's own without one).
// The parse it runs ends in kong's help printer, which exits 0 through
// Run's exit hook.
func (h *HelpCmd) Run(kctx *kong.Context) error {
	args := append(append([]string{}, h.Command...), "--help")
	if _, err := kctx.Kong.Parse(args); err != nil {
		if errors.Is(err, syscall.EPIPE) {
			return err // the reader left: Run's quiet 0, not a usage error
		}
		return &usageError{err: err, hint: usageHint(kctx.Model, h.Command)}
	}
	return nil
}

type usageError struct {
	err  error
	hint string
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Hint() string  { return e.hint }
func (e *usageError) ExitCode() int { return exitcode.Usage }

// usageHint names a command that exists for a command line kong refused:
// the deepest command the words do name, and, when the next word is close
// to one of its subcommands (a typo), that subcommand.
func usageHint(app *kong.Application, args []string) string {
	node := app.Node
	path := []string{app.Name}
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w == "--" {
			break
		}
		if strings.HasPrefix(w, "-") {
			if !strings.Contains(w, "=") && takesValue(node, w) {
				i++
			}
			continue
		}
		child := childNamed(node, w)
		if child == nil {
			if best := closest(node, w); best != "" {
				path = append(path, best)
			}
			break
		}
		node = child
		path = append(path, child.Name)
	}
	return "run '" + strings.Join(path, " ") + " --help' for usage"
}

func commands(n *kong.Node) []*kong.Node {
	var out []*kong.Node
	for _, c := range n.Children {
		if c.Type == kong.CommandNode && !c.Hidden {
			out = append(out, c)
		}
	}
	return out
}

func childNamed(n *kong.Node, name string) *kong.Node {
	for _, c := range commands(n) {
		if c.Name == name {
			return c
		}
		for _, a := range c.Aliases {
			if a == name {
				return c
			}
		}
	}
	return nil
}

// takesValue reports whether flag (as typed: --name or -x) takes the next
// word as its value, looking in n and its ancestors (globals).
func takesValue(n *kong.Node, flag string) bool {
	for ; n != nil; n = n.Parent {
		for _, f := range n.Flags {
			long := strings.TrimPrefix(flag, "--")
			if (strings.HasPrefix(flag, "--") && f.Name == long) ||
				(len(flag) == 2 && f.Short != 0 && flag[1:] == string(f.Short)) {
				return !f.IsBool() && !f.IsCounter()
			}
		}
	}
	return false
}

// closest is n's subcommand nearest to word by edit distance (at most a
// third of the word's length, and 2), or one it is a prefix of; "" if none.
func closest(n *kong.Node, word string) string {
	best, bestD := "", 1<<30
	limit := min(2, max(1, len(word)/3))
	for _, c := range commands(n) {
		d := editDistance(word, c.Name)
		if strings.HasPrefix(c.Name, word) && len(word) >= 2 {
			d = min(d, 1)
		}
		if d <= limit && d < bestD {
			best, bestD = c.Name, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance: Levenshtein with
// adjacent transpositions costing one (stauts → status is one edit).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range rb {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
