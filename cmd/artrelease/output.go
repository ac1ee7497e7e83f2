package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/release"
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
// (quiet) otherwise (README.md, "Conventions every tool shares").
func progress(std cli.IO) func(string, ...any) {
	if !std.ErrTTY {
		return nil
	}
	return func(format string, args ...any) {
		fmt.Fprintf(std.Err, "artrelease: "+format+"\n", args...)
	}
}

// events opens the --events sinks. A sink that cannot be opened is
// reported and the work goes on without events (docs/architecture.md, "How the pieces compose": a sink
// failure never fails the work); a nil Emitter emits nothing.
func events(std cli.IO, g *cli.Globals) *obs.Emitter {
	if len(g.Events) == 0 {
		return nil
	}
	em, err := obs.Open(g.Events, obs.Options{Warn: obs.WarnTo("artrelease", std.Err), Stdout: std.Out})
	if err != nil {
		fmt.Fprintf(std.Err, "artrelease: warning: --events: %s (no events emitted)\n", strings.Join(strings.Fields(err.Error()), " "))
		return nil
	}
	return em
}

// emit records one outcome on subject "release/SUBJECT": TYPE on success,
// TYPE_failed with the error and its exit code otherwise. The record of a
// cancelled run is still written (it is not part of the work).
func emit(ctx context.Context, em *obs.Emitter, subject, typ string, attrs map[string]any, err error) {
	if em == nil {
		return
	}
	if attrs == nil {
		attrs = map[string]any{}
	}
	if err != nil {
		typ += "_failed"
		attrs["error"] = err.Error()
		attrs["exit_code"] = exitcode.Of(err)
	}
	em.Emit(context.WithoutCancel(ctx), obs.Draft{Subject: "release/" + subject, Type: typ, Role: obs.RoleRuntime, Attrs: attrs})
}

func artifactAttrs(as []release.Artifact) []any {
	out := make([]any, 0, len(as))
	for _, a := range as {
		out = append(out, map[string]any{"name": a.Name, "kind": a.Kind, "size": a.Size, "sha256": a.SHA256})
	}
	return out
}
