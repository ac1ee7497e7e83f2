// Package webcli is the command line of `artobs serve` (and of the
// artobs-web binary it executes): its flags, their checks and the
// arguments that carry them from one binary to the other. It links no
// HTTP stack, so artobs itself stays free of net/http
// (internal/layout/binaries_test.go); the server is lib/web.
package webcli

import (
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/vocab"
	"github.com/art-runtime/art/lib/web/webconf"
)

// DefaultListen is the address served when --listen is not given:
// loopback only.
const DefaultListen = "127.0.0.1:8780"

// MinTokenLen bounds a token from below: a guessable token is no gate.
const MinTokenLen = 16

// Flags are the flags of `artobs serve` (docs/web.md).
type Flags struct {
	Listen      string   `name:"listen" default:"127.0.0.1:8780" placeholder:"HOST:PORT" help:"Address to serve on (default 127.0.0.1:8780, loopback). Any non-loopback address needs --token or --token-file."`
	Token       string   `name:"token" env:"ARTOBS_WEB_TOKEN" placeholder:"TOKEN" help:"Require this token (at least 16 characters) on every request: header 'Authorization: Bearer TOKEN', or ?token=TOKEN once, which sets a cookie. Prefer --token-file or $$ARTOBS_WEB_TOKEN: arguments are visible to other users in ps."`
	TokenFile   string   `name:"token-file" placeholder:"FILE" help:"Read the token from FILE (its first line; the file must not be readable by group or others)."`
	AllowHost   []string `name:"allow-host" sep:"none" placeholder:"NAME" help:"Also accept requests whose Host header names NAME (repeatable). By default only the listen address, IP literals and, on loopback, localhost are accepted (DNS rebinding)."`
	Queue       []string `name:"queue" sep:"none" placeholder:"NAME" help:"Show queue NAME (repeatable; default: every file queue under STATE_HOME/queues)."`
	Backend     string   `name:"backend" default:"file" env:"ART_BACKEND" placeholder:"file|nats://HOST:PORT" help:"Where the queues' logs live, as artq --backend (NATS needs --queue)."`
	Sink        []string `name:"sink" sep:"none" placeholder:"PATH" help:"Show the artobs JSONL sink PATH on the events page (repeatable)."`
	Transcripts []string `name:"transcripts" sep:"none" placeholder:"DIR" help:"Agent transcripts may be read from DIR (repeatable): a task whose arguments name --transcript FILE inside DIR shows that run's steps."`
}

// Check validates the flags into the server's configuration (its Home
// is the caller's to set): a bad value is a usage error (exit 2) naming
// the flag; so is a non-loopback --listen without a token.
func (f *Flags) Check() (*webconf.Config, error) {
	s := &webconf.Config{Listen: f.Listen, AllowHost: f.AllowHost, Queues: f.Queue, Backend: f.Backend, Sinks: f.Sink, Dirs: f.Transcripts}
	host, port, err := net.SplitHostPort(f.Listen)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "--listen %q: want HOST:PORT (%v)", f.Listen, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return nil, exitcode.Errorf(exitcode.Usage, "--listen %q: port %q is not a number from 0 to 65535", f.Listen, port)
	}
	s.Loopback = IsLoopback(host)
	switch {
	case f.Token != "" && f.TokenFile != "":
		return nil, exitcode.Errorf(exitcode.Usage, "--token and --token-file: give one")
	case f.TokenFile != "":
		if s.Token, err = readToken(f.TokenFile); err != nil {
			return nil, err
		}
	default:
		s.Token = f.Token
	}
	if s.Token != "" && len(s.Token) < MinTokenLen {
		return nil, exitcode.Errorf(exitcode.Usage, "--token: %d characters, fewer than %d", len(s.Token), MinTokenLen)
	}
	if !s.Loopback && s.Token == "" {
		return nil, exitcode.WithHint(exitcode.Errorf(exitcode.Usage, "--listen %s is not a loopback address: give --token-file or --token", f.Listen),
			"anyone who can reach the address could read every queue, goal and event; e.g. head -c 24 /dev/urandom | base64 > token && chmod 600 token")
	}
	for _, h := range f.AllowHost {
		if h == "" || strings.ContainsAny(h, ":/ \t") {
			return nil, exitcode.Errorf(exitcode.Usage, "--allow-host %q: want a host name without port", h)
		}
	}
	for _, q := range f.Queue {
		if err := vocab.ValidName("--queue", q); err != nil {
			return nil, exitcode.Wrap(exitcode.Usage, err)
		}
	}
	if f.Backend != "file" && !isNATS(f.Backend) {
		return nil, exitcode.Errorf(exitcode.Usage, "--backend %q: want file or nats://HOST:PORT", f.Backend)
	}
	if isNATS(f.Backend) && len(f.Queue) == 0 {
		return nil, exitcode.Errorf(exitcode.Usage, "--backend %s: name the queues with --queue (a NATS server is not listed)", f.Backend)
	}
	for _, d := range f.Transcripts {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return nil, exitcode.Errorf(exitcode.Usage, "--transcripts %s: not a directory", d)
		}
	}
	return s, nil
}

// IsLoopback reports whether host (from HOST:PORT) can be reached only from
// this machine: localhost or a loopback IP. The empty host listens on every
// interface.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// readToken reads the first line of a token file that only its owner can
// read.
func readToken(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", exitcode.Errorf(exitcode.Usage, "--token-file %s: %v", path, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", exitcode.Errorf(exitcode.Usage, "--token-file %s: mode %04o, readable by others (chmod 600 it)", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", exitcode.Errorf(exitcode.Usage, "--token-file %s: %v", path, err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	tok := strings.TrimSpace(line)
	if tok == "" {
		return "", exitcode.Errorf(exitcode.Usage, "--token-file %s: empty", path)
	}
	return tok, nil
}

// Args are the flags as arguments again, for the binary that serves: the
// token travels in the environment ($ARTOBS_WEB_TOKEN), never in argv.
func (f *Flags) Args() []string {
	args := []string{"--listen", f.Listen, "--backend", f.Backend}
	if f.TokenFile != "" {
		args = append(args, "--token-file", f.TokenFile)
	}
	add := func(flag string, vs []string) {
		for _, v := range vs {
			args = append(args, flag, v)
		}
	}
	add("--allow-host", f.AllowHost)
	add("--queue", f.Queue)
	add("--sink", f.Sink)
	add("--transcripts", f.Transcripts)
	return args
}

// TokenEnv is the environment variable --token also reads.
const TokenEnv = "ARTOBS_WEB_TOKEN"

// isNATS reports a NATS backend URL, as lib/queue/nats.IsURL does (that
// package is not linked here: its client brings an HTTP stack).
func isNATS(b string) bool {
	for _, p := range []string{"nats://", "tls://", "ws://", "wss://"} {
		if strings.HasPrefix(b, p) {
			return true
		}
	}
	return false
}

// Help is the long help of `artobs serve` (and artobs-web).
const Help = `Serves a read-only web view of the state home: every queue (counts by
state over time as an SVG chart, tasks by state and id, each task's
attempts, output tail, events and agent transcript), goal journals, and
the events of the --sink files with a live tail. Under /api/ the same data
as the documents artq status, artq log, artgoal show and artobs tail print.
It never writes: any request other than GET or HEAD gets 405.

'artobs serve' checks the flags, then executes artobs-web, found in the
directory of the artobs executable (as git finds git-NAME); it exits 127
when that binary is missing. Loopback by default. Any other --listen needs
a token (--token-file FILE, or $ARTOBS_WEB_TOKEN), else it exits 2; a
browser then opens http://HOST:PORT/?token=TOKEN once (a cookie keeps it)
and scripts send 'Authorization: Bearer TOKEN'. Requests whose Host header
is not this server's are refused (421: DNS rebinding). Stops on Ctrl-C
(exit 130). See docs/web.md.

Example:
  artobs serve --sink events.jsonl --transcripts /var/lib/art/transcripts
  artobs serve --listen 0.0.0.0:8780 --token-file ~/.config/art/web.token --allow-host ci.example.com
  curl -s http://127.0.0.1:8780/api/queues/default/tasks?state=failed | jq -r .id`
