package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/backends"
	natsq "github.com/art-runtime/art/lib/queue/nats"
)

// QueuesCmd lists the queues that exist.
type QueuesCmd struct{}

// Help shows an example.
func (c *QueuesCmd) Help() string {
	return `Lists the queues of the backend: for the file backend the queue
directories under the state home (HOME/queues/NAME), for NATS the streams
named ART_<queue> on the server. JSON: one QueueList document; with -o text
(auto on a terminal), one name a line. A reader given a queue that does not
exist (status, log, fsck) exits 4 and names these in its hint.

Example:
  artq queues
  artq queues --backend nats://127.0.0.1:4222 -o text`
}

// QueueList is what artq queues prints as JSON.
type QueueList struct {
	jsonx.TypeMeta
	Backend string   `json:"backend"`
	Queues  []string `json:"queues"`
}

// Run lists queues.
func (c *QueuesCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals, f *QueueFlags) error {
	bc, err := f.config(g, true)
	if err != nil {
		return err
	}
	names, err := listQueues(ctx, bc, nil)
	if err != nil {
		return err
	}
	if !g.JSON(std) {
		for _, n := range names {
			if _, err := fmt.Fprintln(std.Out, n); err != nil {
				return err
			}
		}
		return nil
	}
	if names == nil {
		names = []string{}
	}
	return writeJSONLine(std.Out, &QueueList{TypeMeta: jsonx.Meta("QueueList"), Backend: backendName(bc), Queues: names})
}

func backendName(c backends.Config) string {
	if natsq.IsURL(c.Backend) {
		return natsq.Redact(c.Backend)
	}
	return "file"
}

// listQueues names the queues that exist: directories under HOME/queues
// holding a queue (a log, a snapshot or a lock file), or the server's
// ART_ streams (through b when it is open already).
func listQueues(ctx context.Context, c backends.Config, b queue.Backend) ([]string, error) {
	if natsq.IsURL(c.Backend) {
		nb, ok := b.(*natsq.Backend)
		if !ok {
			opened, err := backends.Open(c)
			if err != nil {
				return nil, err
			}
			defer opened.Close()
			if nb, ok = opened.(*natsq.Backend); !ok {
				return nil, nil
			}
		}
		return nb.Queues(ctx)
	}
	home := c.Home
	if home == "" {
		var err error
		if home, err = cli.DefaultHome(); err != nil {
			return nil, exitcode.Wrap(exitcode.Usage, err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(home, "queues"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "list queues: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && queue.ValidName("queue", e.Name()) == nil {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// missingQueue is a reader's "not found" for a queue that does not exist,
// with the ones that do in its hint.
type missingQueue struct {
	what     string
	existing []string
}

func (e *missingQueue) Error() string { return e.what + ": does not exist" }

// ExitCode implements exitcode.Coder: not found.
func (e *missingQueue) ExitCode() int { return exitcode.NotFound }

// Hint lists the queues that exist.
func (e *missingQueue) Hint() string {
	if len(e.existing) == 0 {
		return "there are no queues yet: 'artq enqueue' creates one"
	}
	const show = 10
	names := e.existing
	more := ""
	if len(names) > show {
		names, more = names[:show], fmt.Sprintf(" and %d more", len(e.existing)-show)
	}
	return "existing queues: " + strings.Join(names, ", ") + more + " (artq queues lists them; pick one with --queue NAME)"
}

// mustExist refuses a reader's queue that does not exist: with the file
// backend a missing directory, with NATS a missing stream. A missing queue
// and an empty one must not look alike (a typo in --queue or --dir would
// otherwise print nothing and exit 0).
func mustExist(ctx context.Context, c backends.Config, b queue.Backend) error {
	if nb, ok := b.(*natsq.Backend); ok {
		ok, err := nb.Exists(ctx)
		if err != nil || ok {
			return err
		}
		names, _ := nb.Queues(ctx)
		return &missingQueue{what: fmt.Sprintf("queue %s on %s (stream ART_%s)", cmpQueue(c.Queue), natsq.Redact(c.Backend), cmpQueue(c.Queue)), existing: names}
	}
	dir, err := c.QueueDir()
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		return nil // another error: the open that follows reports it
	}
	names, _ := listQueues(ctx, c, nil)
	if c.Dir != "" {
		return &missingQueue{what: "queue directory " + c.Dir, existing: names}
	}
	return &missingQueue{what: fmt.Sprintf("queue %s (no directory %s)", cmpQueue(c.Queue), dir), existing: names}
}

func cmpQueue(q string) string {
	if q == "" {
		return "default"
	}
	return q
}
