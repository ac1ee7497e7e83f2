// Package cli is the kong wiring every art main shares: parsing with usage
// errors mapped to exit 2 (kong's own default is 80), signals turned into a
// cancelled context, stdio bound for commands, the one-line
// "TOOL: error: what: why" message, and the exit code taken from the error.
//
// Only main exits. Commands receive an IO and a context and return errors.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"reflect"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/art-runtime/art/internal/clibase"
	"github.com/art-runtime/art/lib/exitcode"
)

// IO is the process's standard streams, bound into every command's Run
// (its home is package clibase, which binaries without kong use too).
type IO = clibase.IO

// Globals are the flags every tool accepts (README.md, "Conventions every tool shares").
type Globals struct {
	Dir     string           `name:"dir" placeholder:"DIR" help:"State home (default: $$ART_HOME, else $$XDG_STATE_HOME/art, else ~/.local/state/art)."`
	Output  string           `name:"output" short:"o" enum:"auto,json,text" default:"auto" help:"Output format: auto (text on a terminal, JSON otherwise), json or text."`
	Events  []string         `name:"events" sep:"none" placeholder:"SINK" help:"Also emit redacted events to SINK (jsonl:PATH, stdout, or otlphttp://HOST:PORT where the tool exports OpenTelemetry); repeatable; default $$ART_EVENTS. A sink failure is reported, never fails the work."`
	Version kong.VersionFlag `name:"version" help:"Print the version and exit."`
}

// EnvEvents names the environment variable that holds the default --events
// sinks, separated by spaces: a task's tools export where its worker's
// operator says without a flag in every script.
const EnvEvents = "ART_EVENTS"

// EventSinks is --events, else $ART_EVENTS split on spaces. Commands that
// record events use it; those that only read refuse --events and ignore
// the variable.
func (g *Globals) EventSinks() []string {
	if len(g.Events) > 0 {
		return g.Events
	}
	return strings.Fields(os.Getenv(EnvEvents))
}

// Home resolves the state home: --dir, else $ART_HOME, else
// $XDG_STATE_HOME/art, else ~/.local/state/art.
func (g *Globals) Home() (string, error) {
	if g.Dir != "" {
		return g.Dir, nil
	}
	return DefaultHome()
}

// DefaultHome is Home without a --dir flag.
func DefaultHome() (string, error) {
	if h := os.Getenv("ART_HOME"); h != "" {
		return h, nil
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return x + "/art", nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("state home: set --dir or $ART_HOME: %w", err)
	}
	return home + "/.local/state/art", nil
}

// JSON reports whether output should be JSON for this -o value.
func (g *Globals) JSON(io IO) bool {
	switch g.Output {
	case "json":
		return true
	case "text":
		return false
	}
	return !io.OutTTY
}

// SignalError is the cancellation cause when SIGINT or SIGTERM arrives.
type SignalError = clibase.SignalError

// Version is the module version from the build info: the tag for a
// `go install …@v1.2.3` build, else "dev" with the commit it was built from
// when the build recorded one ("dev (0bca10c, modified)").
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified {
		return "dev (" + rev + ", modified)"
	}
	return "dev (" + rev + ")"
}

// Main runs a tool with the real process's arguments, streams and signals and
// returns its exit code. It is the whole body of every main.
func Main(name, description string, grammar any, options ...kong.Option) int {
	ctx, stop := clibase.SignalContext(context.Background())
	defer stop()
	// A reader that stops early (artq log | head) closes the pipe: with
	// SIGPIPE caught, the write fails with EPIPE, which Run turns into a
	// quiet exit 0, instead of the runtime dying of the signal (141).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	return Run(ctx, name, description, grammar, os.Args[1:], clibase.StdIO(), options...)
}

type exitPanic int

// Run parses args against grammar and runs the selected command with ctx and
// std bound. It returns the exit code; it never exits.
func Run(ctx context.Context, name, description string, grammar any, args []string, std IO, options ...kong.Option) (code int) {
	defer func() {
		if r := recover(); r != nil {
			if c, ok := r.(exitPanic); ok {
				code = int(c)
				return
			}
			panic(r)
		}
	}()
	opts := []kong.Option{
		kong.Name(name),
		kong.Description(description),
		kong.Writers(std.Out, std.Err),
		kong.Exit(func(c int) { panic(exitPanic(c)) }),
		kong.Vars{"version": name + " " + Version()},
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoExpandSubcommands: true}),
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.Bind(std),
		kong.PostBuild(showDefaults),
		kong.PostBuild(noCommaSplitting),
		kong.DynamicCommand("help", "Show help for a command (the same as COMMAND --help).", "", &HelpCmd{}),
	}
	if g := globalsOf(grammar); g != nil {
		opts = append(opts, kong.Bind(g))
	}
	opts = append(opts, options...)
	parser, err := kong.New(grammar, opts...)
	if err != nil {
		fmt.Fprintf(std.Err, "%s: error: %v\n", name, err)
		return exitcode.Internal
	}
	kctx, err := parser.Parse(args)
	if errors.Is(err, syscall.EPIPE) {
		// Help, usage or --version written to a reader that left early
		// (artq help status | head -1): the same quiet 0 as a command's.
		return exitcode.OK
	}
	if err != nil {
		fmt.Fprintf(std.Err, "%s: error: %s\n", name, oneLine(err.Error()))
		fmt.Fprintf(std.Err, "%s: hint: %s\n", name, usageHint(parser.Model, args))
		return exitcode.Usage
	}
	if err = checkNameLists(kctx); err == nil {
		err = kctx.Run()
	}
	if err == nil || errors.Is(err, syscall.EPIPE) {
		return exitcode.OK
	}
	if !exitcode.IsQuiet(err) {
		flags := FlagsOf(grammar, kctx)
		fmt.Fprintf(std.Err, "%s: error: %s\n", name, oneLine(Message(err, flags)))
		if h := Hint(err, flags); h != "" {
			fmt.Fprintf(std.Err, "%s: hint: %s\n", name, h)
		}
	}
	return exitcode.Of(err)
}

// showDefaults appends "(default: X)" to the help of every flag that has a
// default its help does not already state: kong prints a default only in
// the placeholder's place, so a flag with a placeholder (--poll=D) hid it.
func showDefaults(k *kong.Kong) error {
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			if f.Default == "" || f.PlaceHolder == "" || f.IsBool() || strings.Contains(strings.ToLower(f.Help), "default") {
				continue
			}
			f.Help = strings.TrimSuffix(strings.TrimSpace(f.Help), ".") + " (default: " + f.Default + ")."
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(k.Model.Node)
	return nil
}

// globalsOf finds an embedded Globals in the grammar struct so that every
// command's Run can ask for *Globals without each main binding it.
func globalsOf(grammar any) *Globals {
	v := reflect.ValueOf(grammar)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	v = v.Elem()
	for i := range v.NumField() {
		if g, ok := v.Field(i).Addr().Interface().(*Globals); ok {
			return g
		}
	}
	return nil
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}
