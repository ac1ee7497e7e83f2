package systest

import (
	"testing"

	"github.com/alecthomas/kong"

	"github.com/art-runtime/art/internal/cli"
)

// FieldCase is one row of a tool's field → flag table test: the command,
// a library field, and the name its messages give that field (a flag, or
// the library's label where the command never named it by flag).
type FieldCase struct {
	Cmd         cli.FieldFlagger
	Field, Want string
}

// FieldFlags checks a tool's field → flag tables: every flag a table
// names is one of its command's flags (cli.CheckFieldFlags on grammar
// built with options),
// and each case's field reads as Want.
func FieldFlags(t *testing.T, grammar any, cases []FieldCase, options ...kong.Option) {
	t.Helper()
	if err := cli.CheckFieldFlags(grammar, options...); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if got := c.Cmd.FieldFlags().Name(c.Field); got != c.Want {
			t.Errorf("%T: field %s is %q; want %q", c.Cmd, c.Field, got, c.Want)
		}
	}
}
