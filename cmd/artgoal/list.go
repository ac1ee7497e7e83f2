package main

import (
	"context"
	"fmt"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/goal"
	"github.com/art-runtime/art/lib/jsonx"
)

// ListCmd lists every goal.
type ListCmd struct{}

// Help shows an example.
func (c *ListCmd) Help() string {
	return `Prints every goal, sorted by id: JSON Lines (one compact journal a line), or
a table with -o text. A journal that cannot be read is reported on stderr
and the others are still listed; the exit code is then 125.

Example:
  artgoal list -o text
  artgoal list | jq -r 'select(.closure == null) | .id'`
}

// Run lists the goals.
func (c *ListCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	s, err := store(g)
	if err != nil {
		return err
	}
	js, problems := s.List()
	if g.JSON(std) {
		for _, j := range js {
			line, err := jsonx.Marshal(j)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(std.Out, "%s\n", line); err != nil {
				return err
			}
		}
	} else if err := goal.WriteList(std.Out, js); err != nil {
		return err
	}
	if len(problems) == 0 {
		return nil
	}
	for _, p := range problems[:len(problems)-1] {
		fmt.Fprintf(std.Err, "artgoal: error: %v\n", p)
	}
	last := problems[len(problems)-1]
	code := exitcode.Of(last)
	for _, p := range problems {
		if exitcode.Of(p) > code {
			code = exitcode.Of(p)
		}
	}
	return exitcode.Wrap(code, last)
}
