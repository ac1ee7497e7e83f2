package systest

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/exitcode"
)

// FlagWalk is one tool's walk of every flag with a bad value (BadFlags).
type FlagWalk struct {
	// Grammar and Options build the tool's kong model, as its main does.
	Grammar any
	Options []kong.Option
	// Base is what a command needs besides the flag under test, keyed by
	// its path ("run", "queue add"), so the bad value is the one thing
	// wrong: "run": {"--", "true"}.
	Base map[string][]string
	// Strings gives bad values for string flags, keyed by "PATH --flag"
	// or "--flag" (every command): a string is only bad in its meaning.
	// String flags without one are not walked.
	Strings map[string]string
	// Codes holds the exit code of a case whose documented code is not the
	// usage code ("PATH --flag" → 126 for a path that escapes the
	// workspace, 4 for a file that does not exist): the flag must still be
	// named.
	Codes map[string]int
	// Skip names flags ("PATH --flag" or "--flag") a negative number or
	// duration does not make wrong, with why.
	Skip map[string]string
	// Run runs the tool with args and returns its exit code and stderr.
	Run func(args []string) (code int, stderr string)
}

// BadFlags runs every command of the tool with each of its flags (its
// own and those of the commands above it) given a bad value — a negative
// duration or number, or the value Strings holds for a string flag — and
// requires what a user who typed it needs: exit 2 (the usage code) and
// the flag's name in the error, whichever layer refused it (kong's
// parser, the command, a library naming a document field).
func BadFlags(t *testing.T, w FlagWalk) {
	t.Helper()
	k, err := kong.New(w.Grammar, append([]kong.Option{kong.Exit(func(int) {})}, w.Options...)...)
	if err != nil {
		t.Fatal(err)
	}
	walked := 0
	var walk func(n *kong.Node, above []*kong.Flag)
	walk = func(n *kong.Node, above []*kong.Flag) {
		flags := append(append([]*kong.Flag{}, above...), n.Flags...)
		if n.Type == kong.CommandNode && len(n.Children) == 0 && !n.Hidden && n.Name != "help" && n.Name != "completion" {
			path := strings.Join(strings.Fields(n.Path()), " ")
			for _, f := range flags {
				flag := "--" + f.Name
				key := path + " " + flag
				if w.Skip[key] != "" || w.Skip[flag] != "" {
					continue
				}
				bad, ok := badValue(f, w.Strings[key], w.Strings[flag])
				if !ok {
					continue
				}
				args := append(append(strings.Fields(path), flag+"="+bad), without(w.Base[path], flag)...)
				want, ok := w.Codes[key]
				if !ok {
					want = exitcode.Usage
				}
				code, stderr := w.Run(args)
				walked++
				if code != want || !strings.Contains(stderr, flag) {
					t.Errorf("%s %s: exit %d, stderr %q; want exit %d naming %s", path, flag+"="+bad, code, strings.TrimSpace(stderr), want, flag)
				}
			}
		}
		for _, c := range n.Children {
			walk(c, flags)
		}
	}
	walk(k.Model.Node, nil)
	if walked == 0 {
		t.Error("no flag walked")
	}
}

// badValue is the bad value for f: a negative duration or number, or the
// string given for it; ok is false for a flag with none (bools, enums
// kong checks itself, free strings).
func badValue(f *kong.Flag, byPath, byFlag string) (string, bool) {
	t := f.Target.Type()
	switch {
	case f.IsBool() || f.IsCounter() || f.Enum != "":
		return "", false
	case t == reflect.TypeFor[time.Duration]():
		return "-1s", true
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "-1", true
	}
	if byPath != "" {
		return byPath, true
	}
	return byFlag, byFlag != ""
}

// InProcess is a FlagWalk.Run that runs a tool through cli.Run in this
// process, with a fresh grammar from grammar each time (kong fills it),
// no stdin, its own state home (dir) and a bounded context: a flag whose
// bad value is not refused must not start real work that lasts.
func InProcess(t *testing.T, name string, grammar func() (any, []kong.Option)) func(args []string) (int, string) {
	home := t.TempDir()
	return func(args []string) (int, string) {
		t.Setenv("ART_HOME", home)
		g, opts := grammar()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var out, errb bytes.Buffer
		code := cli.Run(ctx, name, "", g, args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}, opts...)
		return code, errb.String()
	}
}

// without is base without flag and its value (the case gives its own).
func without(base []string, flag string) []string {
	var out []string
	for i := 0; i < len(base); i++ {
		switch {
		case base[i] == "--":
			return append(out, base[i:]...)
		case base[i] == flag:
			i++
		case strings.HasPrefix(base[i], flag+"="):
		default:
			out = append(out, base[i])
		}
	}
	return out
}
