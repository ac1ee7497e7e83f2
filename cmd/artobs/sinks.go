package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/obs"
)

// SinkFlags are the delivery flags of emit and deliver.
type SinkFlags struct {
	Sink         []string `name:"sink" placeholder:"SPEC" help:"Deliver to SPEC: jsonl:PATH (owner-only file, created 0600) or stdout; repeatable. Default: stdout. --events SPEC is the same."`
	Sync         bool     `name:"sync" help:"fsync each JSONL record before going on (concurrent writers share fsyncs)."`
	RecoverBytes int64    `name:"recover-bytes" placeholder:"N" help:"How much of a JSONL file's tail to read on open for recent ids and per-subject sequences (default 4 MiB)."`
}

// HMACFlag is --hmac-key-env.
type HMACFlag struct {
	HMACKeyEnv string `name:"hmac-key-env" placeholder:"VAR" help:"Mask with a keyed hash (HMAC-SHA256 with the value of $$VAR, at least 16 bytes) instead of [REDACTED:rule], so equal secrets correlate across events without being recoverable."`
}

func (h HMACFlag) key() ([]byte, error) {
	if h.HMACKeyEnv == "" {
		return nil, nil
	}
	v, ok := os.LookupEnv(h.HMACKeyEnv)
	if !ok || v == "" {
		return nil, exitcode.Errorf(exitcode.Usage, "--hmac-key-env %s: the variable is not set", h.HMACKeyEnv)
	}
	if len(v) < 16 {
		return nil, exitcode.Errorf(exitcode.Usage, "--hmac-key-env %s: the key has %d bytes; use at least 16", h.HMACKeyEnv, len(v))
	}
	return []byte(v), nil
}

// open opens the emitter on --sink and --events specs (stdout when none).
func (f SinkFlags) open(std cli.IO, g *cli.Globals, key []byte, replay bool) (*obs.Emitter, error) {
	if f.RecoverBytes < 0 {
		return nil, exitcode.Errorf(exitcode.Usage, "--recover-bytes %d: must not be negative", f.RecoverBytes)
	}
	specs := append(append([]string{}, f.Sink...), g.Events...)
	if len(specs) == 0 {
		specs = []string{"stdout"}
	}
	em, err := obs.Open(specs, obs.Options{Sync: f.Sync, HMACKey: key, Stdout: std.Out, RecoverBytes: f.RecoverBytes, Replay: replay})
	if errors.Is(err, obs.ErrSinkSpec) {
		return nil, fmt.Errorf("--sink/--events: %w", err)
	}
	if err != nil {
		return nil, err
	}
	noteRecovery(std.Err, em)
	return em, nil
}

// noteRecovery says on stderr when opening a sink repaired its tail.
func noteRecovery(w io.Writer, em *obs.Emitter) {
	for _, s := range em.Sinks() {
		if j, ok := s.(*obs.JSONL); ok {
			if r := j.Recovery(); r.TornBytes > 0 {
				fmt.Fprintf(w, "artobs: note: %s: truncated a torn last record (%d bytes) left by a writer that died mid-write\n", j.Path(), r.TornBytes)
			}
		}
	}
}
