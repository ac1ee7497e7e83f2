package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/backends"
	natsq "github.com/art-runtime/art/lib/queue/nats"
)

// QueueFlags are on every artq command (docs/artq.md).
type QueueFlags struct {
	Queue   string `name:"queue" default:"default" env:"ART_QUEUE" placeholder:"NAME" help:"Queue name: letters, digits, - and _ (default: default). Ignored with --dir."`
	Backend string `name:"backend" default:"file" env:"ART_BACKEND" placeholder:"file|nats://HOST:PORT" help:"Where the log lives: file (a local directory, the default) or nats://HOST:PORT (a JetStream stream per queue; see docs/artq-nats.md)."`
	// LockTimeout bounds every wait for the file backend's append lock.
	LockTimeout time.Duration `name:"lock-timeout" default:"30s" env:"ART_LOCK_TIMEOUT" placeholder:"D" help:"File backend: how long a write waits for the queue's append lock before it fails (exit 125) naming the holder's pid and command (default 30s)."`
}

// open opens the queue's backend. readOnly backends write nothing at all:
// status, log and fsck use them.
//
// A read-only open is a reader's: a queue that does not exist is "not
// found" (exit 4) with the existing queues in the hint.
func (f *QueueFlags) open(g *cli.Globals, readOnly bool) (queue.Backend, error) {
	c, err := f.config(g, readOnly)
	if err != nil {
		return nil, err
	}
	if readOnly && (c.Backend == "" || c.Backend == "file") {
		if err := mustExist(context.Background(), c, nil); err != nil {
			return nil, err
		}
	}
	b, err := backends.Open(c)
	if err != nil || !readOnly || !natsq.IsURL(c.Backend) {
		return b, err
	}
	if err := mustExist(context.Background(), c, b); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// config is the backend configuration the flags name; work adds its lease.
func (f *QueueFlags) config(g *cli.Globals, readOnly bool) (backends.Config, error) {
	if len(g.Events) > 0 && readOnly {
		return backends.Config{}, errEventsReadOnly
	}
	if f.LockTimeout <= 0 {
		return backends.Config{}, exitcode.Errorf(exitcode.Usage, "--lock-timeout: must be positive")
	}
	c := backends.Config{Backend: f.Backend, Queue: f.Queue, Dir: g.Dir, ReadOnly: readOnly, LockTimeout: f.LockTimeout}
	if c.Dir == "" && !natsq.IsURL(c.Backend) {
		home, err := cli.DefaultHome()
		if err != nil {
			return c, exitcode.Wrap(exitcode.Usage, err)
		}
		c.Home = home
	}
	return c, nil
}

// tailDir is where workers on this machine keep failed attempts' output
// tails: QUEUEDIR/tails for the file backend; for NATS, which has no
// directory, HOME/queues/NAME/tails on the worker's machine.
func (f *QueueFlags) tailDir(g *cli.Globals) (string, error) { return f.localDir(g, "tails") }

// localDir is QUEUEDIR/sub, or HOME/queues/NAME/sub for NATS (see
// tailDir): where a worker keeps what is its own on this machine.
func (f *QueueFlags) localDir(g *cli.Globals, sub string) (string, error) {
	c, err := f.config(g, false)
	if err != nil {
		return "", err
	}
	if natsq.IsURL(c.Backend) {
		if c.Home, err = cli.DefaultHome(); err != nil {
			return "", nil // no home: keep no tail rather than fail the worker
		}
		c.Dir = ""
	}
	dir, err := c.QueueDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, sub), nil
}

// writeJSONLine writes v as one compact JSON line.
func writeJSONLine(w io.Writer, v any) error {
	data, err := jsonx.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// readInput reads FILE, or stdin for "-".
func readInput(std cli.IO, name string) ([]byte, error) {
	r, err := openInput(std, name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, inputErr(name, err)
	}
	return data, nil
}

// openInput opens FILE, or stdin for "-", for reading as a stream.
func openInput(std cli.IO, name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(std.In), nil
	}
	f, err := os.Open(name)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, exitcode.Errorf(exitcode.NotFound, "%s: no such file", name)
		}
		return nil, inputErr(name, err)
	}
	return f, nil
}

// inputErr is a failure reading FILE or stdin ("-"): the tool's own (125).
func inputErr(name string, err error) error {
	if name == "-" {
		return exitcode.Errorf(exitcode.Internal, "read stdin: %w", err)
	}
	return exitcode.Errorf(exitcode.Internal, "read %s: %w", name, err)
}

// printStatuses prints task statuses: JSON Lines, or a table.
func printStatuses(std cli.IO, g *cli.Globals, list []queue.TaskStatus) error {
	w := bufio.NewWriterSize(std.Out, 1<<16)
	if g.JSON(std) {
		for i := range list {
			if err := writeJSONLine(w, &list[i]); err != nil {
				return err
			}
		}
	} else if err := queue.WriteTable(w, list, now()); err != nil {
		return err
	}
	return w.Flush()
}

// cancelled returns ctx's cause once it has ended.
func cancelled(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// now is the clock for "ago" columns.
var now = time.Now
