package main

import (
	"fmt"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/jsonx"
)

// writeJSON prints v as indented JSON on stdout.
func writeJSON(std cli.IO, v any) error {
	data, err := jsonx.MarshalIndent(v)
	if err != nil {
		return err
	}
	_, err = std.Out.Write(data)
	return err
}

// progress returns a line printer on stderr when it is a terminal, and nil
// (quiet) otherwise (DESIGN.md §2).
func progress(std cli.IO) func(string, ...any) {
	if !std.ErrTTY {
		return nil
	}
	return func(format string, args ...any) {
		fmt.Fprintf(std.Err, "artrelease: "+format+"\n", args...)
	}
}
