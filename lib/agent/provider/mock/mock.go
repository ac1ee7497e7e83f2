// Package mock is the scripted provider: it replays a JSON Lines script, or
// a recorded transcript as a cassette, and records every request it is
// given. It does no I/O after loading and never sleeps.
//
// A script's line N answers step N: either a decision, returned verbatim as
// the model's text (so a malformed line exercises the loop's format-error
// path exactly as a real model's would), or {"error":"…"}, returned as a
// provider error. Because replies are indexed by step rather than consumed
// in order, a resumed run continues at the right line.
//
// A cassette answers step N with the reply recorded for step N, and only
// if the request's hash equals the recorded request hash: a run that has
// diverged from the recording fails loudly instead of replaying decisions
// made for a different situation.
package mock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/art-runtime/art/lib/agent/provider"
	"github.com/art-runtime/art/lib/agent/transcript"
	"github.com/art-runtime/art/lib/exitcode"
)

// Name is the provider's name in errors and transcripts.
const Name = "mock"

// MaxScriptBytes bounds a script file.
const MaxScriptBytes = 64 << 20

type answer struct {
	text      string
	err       string
	hash      string // cassette only
	usage     *provider.Usage
	truncated bool     // cassette: the recorded reply was cut off at the token limit
	ended     bool     // cassette: the server ended the recorded reply without a finish reason
	denied    []string // cassette: the recorded reply used denied tools
}

// Provider replays answers.
type Provider struct {
	answers  map[int]answer
	cassette bool
	source   string

	mu       sync.Mutex
	requests []*provider.Request
}

// Load reads a JSON Lines script; blank lines are skipped and do not count.
func Load(path string) (*Provider, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("mock script %s: %w", path, err)
	}
	p.source = path
	return p, nil
}

// Parse builds a provider from script bytes.
func Parse(data []byte) (*Provider, error) {
	p := &Provider{answers: map[int]answer{}}
	step := 0
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		step++
		msg, isErr, err := errorLine(line)
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Usage, "line %d: %v", i+1, err)
		}
		if isErr {
			p.answers[step] = answer{err: msg}
		} else {
			p.answers[step] = answer{text: string(line)}
		}
	}
	if step == 0 {
		return nil, exitcode.Errorf(exitcode.Usage, "empty script")
	}
	return p, nil
}

// New builds a provider from script lines, for tests.
func New(lines ...string) *Provider {
	p, err := Parse([]byte(strings.Join(lines, "\n")))
	if err != nil {
		panic(err)
	}
	return p
}

// errorLine recognises {"error":"…"}: an object whose only member is a
// string "error". Anything else is a decision for the loop to judge.
func errorLine(line []byte) (string, bool, error) {
	if !bytes.Contains(line, []byte(`"error"`)) {
		return "", false, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil || len(m) != 1 {
		return "", false, nil
	}
	raw, ok := m["error"]
	if !ok {
		return "", false, nil
	}
	var msg string
	if err := json.Unmarshal(raw, &msg); err != nil {
		return "", false, fmt.Errorf(`"error" must be a string`)
	}
	if msg == "" {
		return "", false, fmt.Errorf(`"error" must not be empty`)
	}
	return msg, true, nil
}

// Cassette builds a provider that replays the replies recorded in a
// transcript, checking each request against the recorded hash.
func Cassette(path string) (*Provider, error) {
	recs, err := transcript.Read(path)
	if err != nil {
		return nil, err
	}
	p := &Provider{answers: map[int]answer{}, cassette: true, source: path}
	for _, r := range recs {
		switch {
		case r.Type == transcript.TypeStep && !r.Interrupted && r.Reply != nil:
			p.answers[r.Step] = answer{text: *r.Reply, hash: r.RequestHash, usage: r.Usage, truncated: r.Outcome == "truncated" && !r.Ended, ended: r.Ended, denied: r.Denied}
		case r.Type == transcript.TypeEnd && r.Status == "provider_error" && r.Step > 0:
			p.answers[r.Step] = answer{err: r.Error, hash: r.RequestHash}
		}
	}
	if len(p.answers) == 0 {
		return nil, exitcode.Errorf(exitcode.Usage, "cassette %s: no recorded replies", path)
	}
	return p, nil
}

// ErrMismatch is returned when a request differs from the recording.
var ErrMismatch = errors.New("request does not match the recording")

// Decide answers req.Step from the script or cassette.
func (p *Provider) Decide(ctx context.Context, req *provider.Request) (*provider.Reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, &provider.Error{Provider: Name, Err: context.Cause(ctx)}
	}
	p.mu.Lock()
	p.requests = append(p.requests, req)
	p.mu.Unlock()
	a, ok := p.answers[req.Step]
	if !ok {
		what := "script"
		if p.cassette {
			what = "cassette"
		}
		return nil, provider.Errorf(Name, "%s has no reply for step %d", what, req.Step)
	}
	if p.cassette && a.hash != "" {
		if h := req.Hash(); h != a.hash {
			return nil, provider.Errorf(Name, "cassette step %d: %w (request %s, recorded %s)", req.Step, ErrMismatch, h, a.hash)
		}
	}
	if a.err != "" {
		return nil, provider.Errorf(Name, "%s", a.err)
	}
	r := &provider.Reply{Text: a.text, Truncated: a.truncated, Ended: a.ended, Denied: a.denied}
	if a.usage != nil {
		u := *a.usage
		r.Usage = &u
	}
	return r, nil
}

// Requests returns the requests received so far, in order.
func (p *Provider) Requests() []*provider.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*provider.Request(nil), p.requests...)
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.NotFound, fmt.Errorf("mock script %s: %w", path, errors.Unwrap(err)))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxScriptBytes {
		return nil, exitcode.Errorf(exitcode.Usage, "mock script %s: %d bytes exceeds %d", path, fi.Size(), MaxScriptBytes)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, fmt.Errorf("mock script %s: %w", path, err)
	}
	return buf.Bytes(), nil
}
