package cli

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/art-runtime/art/lib/exitcode"
)

// The one rule for lists, in every tool: a flag that takes several values
// is repeated, one value each (--allow go --allow make), and no value is
// ever split at commas (kong's default for slice flags is to split, which
// made --allow echo,sh mean two programs in one tool and one in another).
//
// A flag tagged names:"" holds names that cannot contain a comma (program
// names, environment variable names): a value with a comma there can only
// be a mistaken list, and taking it as one name would be silently wrong
// (--env HOME,PATH passes no variable), so it is a usage error whose hint
// spells out the repeated flags.

// noCommaSplitting turns kong's comma splitting off for every slice flag
// and positional argument of the grammar.
func noCommaSplitting(k *kong.Kong) error {
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			if f.Tag != nil && f.Target.Kind() == reflect.Slice {
				f.Tag.Sep = -1
			}
		}
		for _, p := range n.Positional {
			if p.Tag != nil && p.Target.Kind() == reflect.Slice {
				p.Tag.Sep = -1
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(k.Model.Node)
	return nil
}

// ListError is a names:"" flag given a comma list.
type ListError struct {
	Flag  string // "--allow"
	Value string // "echo,true"
}

func (e *ListError) Error() string {
	return fmt.Sprintf("--%s %q: a name cannot contain a comma (lists are not split)", e.Flag, e.Value)
}

// Hint is the same list as repeated flags.
func (e *ListError) Hint() string {
	var parts []string
	for _, v := range strings.Split(e.Value, ",") {
		if v = strings.TrimSpace(v); v != "" {
			parts = append(parts, "--"+e.Flag+" "+v)
		}
	}
	return "repeat the flag, one name each: " + strings.Join(parts, " ")
}

// ExitCode implements exitcode.Coder: usage.
func (e *ListError) ExitCode() int { return exitcode.Usage }

// checkNameLists refuses a comma in any names:"" flag of the parsed command.
func checkNameLists(kctx *kong.Context) error {
	for _, f := range kctx.Flags() {
		if f.Tag == nil || !f.Tag.Has("names") || !f.Target.IsValid() {
			continue
		}
		t := f.Target
		if t.Kind() != reflect.Slice {
			continue
		}
		for i := range t.Len() {
			if v, ok := t.Index(i).Interface().(string); ok && strings.Contains(v, ",") {
				return &ListError{Flag: f.Name, Value: v}
			}
		}
	}
	return nil
}
