package runcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/art-runtime/art/internal/clibase"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/exitcode"
)

// Fast runs `artexec run` without kong: neither its model of the whole
// grammar, which cost more than a millisecond of a cold process, nor the
// initialisation of kong and everything else the full command line links
// (the artexec binary is this package; docs/artexec.md, "Two binaries"):
// artexec sits in front of every command a CI job or a worker runs.
//
// It takes only the plain forms — run's own flags as --name VALUE or
// --name=VALUE, each scalar at most once, then -- or the first positional
// argument — and declines everything else (help, globals, short flags,
// anything it cannot parse exactly as kong would) by returning false, so
// the full command line (package execcli) parses it with kong and reports
// any error. TestFastParseMatchesKong holds the
// two parsers to the same Cmd for every form the fast one accepts.
//
// An invocation it accepts but that fails before anything started (a
// refusal, a bad document) is also handed back to kong, which repeats the
// same checks and reports the error the usual way: building the task only
// reads files, so doing it twice changes nothing (a manifest on stdin,
// which could not be read twice, is declined up front).
func Fast(args []string) (int, bool) {
	c, ok := Parse(args, os.Getenv)
	if !ok {
		return 0, false
	}
	std := clibase.StdIO()
	t, p, err := c.Build(std)
	if err != nil {
		return 0, false
	}
	ctx, stop := clibase.OneShotSignalContext(context.Background())
	defer stop()
	err = c.Execute(ctx, std, !std.OutTTY, execx.Run, t, p) // -o auto: JSON unless stdout is a terminal
	var pe printError
	switch {
	case err == nil:
		return exitcode.OK, true
	case exitcode.IsQuiet(err):
		return exitcode.Of(err), true
	case errors.As(err, &pe): // the program ran: never run it again
		fmt.Fprintf(os.Stderr, "artexec: error: %v\n", err)
		return exitcode.Internal, true
	}
	return 0, false // nothing ran: let kong redo it and report the error
}

// printError marks a failure to write the Result, which happens after the
// program ran and so must not be retried.
type printError struct{ error }

func (e printError) Unwrap() error { return e.error }

// Parse parses run's flags the way kong does, or declines.
func Parse(args []string, getenv func(string) string) (*Cmd, bool) {
	if len(args) == 0 || args[0] != "run" {
		return nil, false
	}
	c := &Cmd{}
	seen := map[string]bool{}
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			break
		}
		if !utf8.ValidString(a) {
			return nil, false // kong rewrites invalid UTF-8 in flags; let it
		}
		if !strings.HasPrefix(a, "--") {
			return nil, false // short flags are kong's
		}
		name, value, hasValue := strings.Cut(a[2:], "=")
		kind, ok := fastFlags[name]
		if !ok {
			return nil, false
		}
		if kind == 'b' {
			if hasValue || seen[name] {
				return nil, false
			}
			seen[name] = true
			switch name {
			case "stream":
				c.Stream = true
			case "isolation-best-effort":
				c.IsolationBestEffort = true
			}
			continue
		}
		if !hasValue {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") || !utf8.ValidString(args[i+1]) {
				return nil, false
			}
			i++
			value = args[i]
		}
		if (name == "allow" || name == "env") && strings.Contains(value, ",") {
			return nil, false // a mistaken list: kong's names check reports it
		}
		if kind != 'l' {
			if seen[name] {
				return nil, false
			}
			seen[name] = true
		}
		if !c.setFast(name, kind, value) {
			return nil, false
		}
	}
	if i < len(args) {
		c.Command = args[i:]
	}
	if (len(c.Command) == 0 && c.Manifest == "") || c.Manifest == "-" {
		return nil, false
	}
	if c.Policy == "" {
		c.Policy = getenv("ART_POLICY")
	}
	return c, true
}

// fastFlags are run's flags by kind: s string, l repeatable string, b
// bool, d duration, i integer, e isolation backend.
var fastFlags = map[string]byte{
	"policy": 's', "workspace": 's', "manifest": 's', "cwd": 's', "result": 's',
	"allow": 'l', "context": 'l', "env": 'l', "set": 'l', "allow-host": 'l',
	"stream": 'b', "isolation-best-effort": 'b',
	"timeout": 'd', "kill-after": 'd', "grace": 'd', "max-timeout": 'd',
	"output-bytes": 'i', "max-output": 'i', "cpu-seconds": 'i', "memory-bytes": 'i',
	"processes": 'i', "file-bytes": 'i', "open-files": 'i',
	"isolation": 'e', "network": 'e',
}

// setFast stores one flag's value, or reports that kong must parse it.
func (c *Cmd) setFast(name string, kind byte, v string) bool {
	switch kind {
	case 'd':
		d, err := time.ParseDuration(v)
		if err != nil {
			return false
		}
		switch name {
		case "timeout":
			c.Timeout = d
		case "kill-after":
			c.KillAfter = d
		case "grace":
			c.Grace = d
		case "max-timeout":
			c.MaxTimeout = d
		}
		return true
	case 'i':
		// Plain decimal only: kong parses with base 0 ("010" is 8).
		if v != "0" && (v == "" || v[0] < '1' || v[0] > '9' || strings.Trim(v, "0123456789") != "") {
			return false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return false
		}
		switch name {
		case "output-bytes":
			c.OutputBytes = n
		case "max-output":
			c.MaxOutput = n
		case "cpu-seconds":
			c.CPUSeconds = n
		case "memory-bytes":
			c.MemoryBytes = n
		case "processes":
			c.Processes = n
		case "file-bytes":
			c.FileBytes = n
		case "open-files":
			c.OpenFiles = n
		}
		return true
	case 'e':
		switch {
		case name == "network" && slices.Contains([]string{"host", "allow", "loopback", "none"}, v):
			c.Network = v
			return true
		case name == "isolation" && slices.Contains([]string{"none", "landlock", "strict", "seatbelt"}, v):
			c.Isolation = v
			return true
		}
		return false
	}
	switch name {
	case "policy":
		c.Policy = v
	case "workspace":
		c.Workspace = v
	case "manifest":
		c.Manifest = v
	case "cwd":
		c.Cwd = v
	case "result":
		c.Result = v
	case "allow":
		c.Allow = append(c.Allow, v)
	case "context":
		c.Context = append(c.Context, v)
	case "env":
		c.Env = append(c.Env, v)
	case "set":
		c.Set = append(c.Set, v)
	case "allow-host":
		c.AllowHost = append(c.AllowHost, v)
	}
	return true
}
