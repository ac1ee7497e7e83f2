package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

// Flags maps library fields (exitcode.FieldError.Field and the fields a
// message or hint names with exitcode.Ref) to the flag that sets them in
// one command: {"Workspace": "--workspace"}. It also maps document paths
// (jsonx.FieldError.Path, "task.dir", "task.limits.timeout") to the flag
// and value as typed ({"task.dir": "--cwd ../.."}) when a flag set that
// field in this run: the error then reads "--cwd ../..: parent directory
// component not allowed" instead of naming a document the user never
// wrote. Libraries name fields, never
// flags; the CLI words their errors in its flags through this table, as
// age's CLI adds its flags and hints to the library's typed errors.
//
// A field the table does not hold keeps the library's wording
// (exitcode.Label): only a field a flag of this command really sets may be
// named by that flag, or the message would send the user to the wrong
// place (a workspace refused from the policy document is
// "policy.workspace", never --workspace).
type Flags map[string]string

// FieldFlagger is implemented by a command (or the tool's grammar, for
// fields every command shares) whose flags fill library fields.
type FieldFlagger interface {
	FieldFlags() Flags
}

// Given adds path → "flag value" when the flag was given in this run
// (given), so an error about that document path names the flag; value is
// printed with fmt ("" for none: a repeatable flag, whose element the
// message names).
func (f Flags) Given(path, flag string, given bool, value any) {
	if !given {
		return
	}
	if v := fmt.Sprint(value); v != "" {
		flag += " " + v
	}
	f[path] = flag
}

// Name is the name of field in this command: its flag, else the library's
// label.
func (f Flags) Name(field string) string {
	if flag, ok := f[field]; ok {
		return flag
	}
	return exitcode.Label(field)
}

// With returns f and more in one table, more winning.
func (f Flags) With(more Flags) Flags {
	out := make(Flags, len(f)+len(more))
	for k, v := range f {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// FlagsOf is the table of the command kctx selected: the grammar's (for
// the fields every command of the tool shares), then the command's own.
func FlagsOf(grammar any, kctx *kong.Context) Flags {
	var f Flags
	if g, ok := grammar.(FieldFlagger); ok {
		f = f.With(g.FieldFlags())
	}
	if kctx == nil {
		return f
	}
	if n := kctx.Selected(); n != nil && n.Target.IsValid() && n.Target.CanAddr() {
		if c, ok := n.Target.Addr().Interface().(FieldFlagger); ok {
			f = f.With(c.FieldFlags())
		}
	}
	return f
}

// Message is err's one-line text as the CLI prints it: every
// exitcode.FieldError in err's tree worded with flags' names instead of
// the library's labels.
func Message(err error, flags Flags) string {
	msg := err.Error()
	if len(flags) == 0 {
		return msg
	}
	exitcode.Walk(err, func(e error) {
		var lib, cli string
		switch fe := e.(type) {
		case *exitcode.FieldError:
			name := flags.Name
			if fe.Value != "" {
				// The error says the value itself: the flag alone.
				name = func(field string) string {
					n, _, _ := strings.Cut(flags.Name(field), " ")
					return n
				}
			}
			lib, cli = fe.Error(), fe.Render(name)
			if flag, ok := flags[fe.Field]; ok && !strings.Contains(cli, flag) {
				// A message that words the field its own way
				// ("policy FILE: no such file") still names the flag.
				cli = flag + ": " + cli
			}
		case *jsonx.FieldError:
			lib, cli = fe.Error(), flags.document(fe)
		default:
			return
		}
		if lib != cli && cli != "" {
			msg = strings.Replace(msg, lib, cli, 1)
		}
	})
	// A message that names a document path as text ("task.dir: ../..: …",
	// wrapped with fmt rather than typed) is worded the same way.
	for path := range flags {
		if !strings.Contains(path, ".") || strings.ToLower(path) != path {
			continue
		}
		if i := strings.Index(msg, path+": "); i >= 0 {
			msg = msg[:i] + flags.document(&jsonx.FieldError{Path: path, Msg: msg[i+len(path)+2:]})
		}
	}
	return msg
}

// document words a document-path error as the flag that set the field:
// "--cwd ../..: parent directory component not allowed". An element of a
// list ("policy.allow[0]") is found under the list's path. The value is
// said once: a message that starts with it ("../..: …") loses that start.
// "" when no flag of this run set the field.
func (f Flags) document(fe *jsonx.FieldError) string {
	path := fe.Path
	flag, ok := f[path]
	if !ok {
		if i := strings.IndexByte(path, '['); i > 0 {
			flag, ok = f[path[:i]]
		}
	}
	if !ok {
		return ""
	}
	msg := fe.Msg
	if _, value, hasValue := strings.Cut(flag, " "); hasValue {
	trim:
		for _, v := range []string{value, strconv.Quote(value)} {
			for _, sep := range []string{": ", " "} {
				if rest, cut := strings.CutPrefix(msg, v+sep); cut {
					msg = rest
					break trim
				}
			}
		}
	}
	return flag + ": " + msg
}

// Hint is the first hint in err's chain (an error with a Hint method),
// its fields worded as flags, or "".
func Hint(err error, flags Flags) string {
	var h interface{ Hint() string }
	if !errors.As(err, &h) {
		return ""
	}
	if r, ok := h.(interface {
		RenderHint(func(string) string) string
	}); ok {
		return r.RenderHint(flags.Name)
	}
	return h.Hint()
}

// CheckFieldFlags builds grammar's model and checks that every flag a
// FieldFlags table names (the grammar's, for every command, and each
// command's own) is a flag of that command or of one above it: a table
// naming a renamed or removed flag would send the user to a flag that does
// not exist. Each tool's tests call it.
func CheckFieldFlags(grammar any, options ...kong.Option) error {
	k, err := kong.New(grammar, append([]kong.Option{kong.Exit(func(int) {})}, options...)...)
	if err != nil {
		return err
	}
	var root Flags
	if g, ok := grammar.(FieldFlagger); ok {
		root = g.FieldFlags()
	}
	var errs []error
	var walk func(n *kong.Node, above map[string]bool)
	walk = func(n *kong.Node, above map[string]bool) {
		have := map[string]bool{}
		for name := range above {
			have[name] = true
		}
		for _, f := range n.Flags {
			have["--"+f.Name] = true
		}
		table := root
		if n.Type == kong.CommandNode && n.Target.IsValid() && n.Target.CanAddr() {
			if c, ok := n.Target.Addr().Interface().(FieldFlagger); ok {
				table = table.With(c.FieldFlags())
			}
		}
		if n.Type == kong.CommandNode && len(n.Children) == 0 {
			for field, flag := range table {
				flag, _, _ = strings.Cut(flag, " ") // "--cwd ../..": the flag and its value
				if !have[flag] {
					errs = append(errs, fmt.Errorf("%s: field %s maps to %s, which is not one of its flags", n.FullPath(), field, flag))
				}
			}
		}
		for _, c := range n.Children {
			walk(c, have)
		}
	}
	walk(k.Model.Node, nil)
	return errors.Join(errs...)
}
