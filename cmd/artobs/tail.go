package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/obs"
)

// TailCmd prints the end of a JSONL sink.
type TailCmd struct {
	Path    string        `arg:"" name:"path" help:"The JSONL sink."`
	Subject string        `name:"subject" placeholder:"S" help:"Only events of subject S."`
	Lines   int           `name:"lines" short:"n" default:"10" placeholder:"N" help:"Print the last N events first."`
	Follow  bool          `name:"follow" short:"f" help:"Then keep printing events as they are appended, until interrupted."`
	Poll    time.Duration `name:"poll" default:"200ms" placeholder:"D" help:"How often --follow looks for new events."`
}

// Help shows an example.
func (c *TailCmd) Help() string {
	return `Prints the last events of a JSONL sink as they are stored (JSON Lines), or
one readable line each with -o text (time, subject#seq, type, role,
redaction count, attributes). It reads backwards from the end, so it is
cheap on a large file; a record still being written is printed once it is
complete. A missing file exits 4.

Example:
  artobs tail events.jsonl -n 20 -o text
  artobs tail events.jsonl --subject task/build-1 --follow | jq -c .attrs`
}

// Run tails.
func (c *TailCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	switch {
	case c.Lines < 0:
		return exitcode.Errorf(exitcode.Usage, "--lines %d: must not be negative", c.Lines)
	case c.Poll <= 0:
		return exitcode.Errorf(exitcode.Usage, "--poll %s: must be positive", c.Poll)
	}
	asJSON := g.JSON(std)
	return obs.Tail(ctx, c.Path, obs.TailOptions{Subject: c.Subject, Lines: c.Lines, Follow: c.Follow, Poll: c.Poll}, func(line []byte) error {
		if asJSON {
			_, err := fmt.Fprintf(std.Out, "%s\n", line)
			return err
		}
		_, err := fmt.Fprintln(std.Out, textLine(line))
		return err
	})
}

// textLine is the human view of one record.
func textLine(line []byte) string {
	env, _, err := obs.ParseEnvelope(line)
	if err != nil {
		return "? " + err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s#%d %s", env.TimeString(), env.Subject(), env.Seq(), env.Type())
	if env.Role() != "" {
		fmt.Fprintf(&b, " role=%s", env.Role())
	}
	if n := env.Redaction().Count(); n > 0 {
		fmt.Fprintf(&b, " redacted=%d", n)
	}
	var attrs map[string]json.RawMessage
	if json.Unmarshal(env.Attrs(), &attrs) == nil {
		for _, k := range slices.Sorted(maps.Keys(attrs)) {
			fmt.Fprintf(&b, " %s=%s", k, attrs[k])
		}
	}
	return b.String()
}
