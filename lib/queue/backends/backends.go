// Package backends turns a Config (artq's --backend, --queue and --dir
// flags) into a queue.Backend. Its refusals are *exitcode.FieldError
// naming the Config field ("Backend", "Queue", "Dir"). It is the one place that knows every backend; the queue
// package knows none.
package backends

import (
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/file"
	natsq "github.com/art-runtime/art/lib/queue/nats"
)

// Config says which queue to open and how.
type Config struct {
	// Backend is "file" (the default when empty) or "nats://HOST:PORT".
	Backend string
	// Queue is the queue's name (default "default").
	Queue string
	// Dir is the file backend's queue directory; empty means
	// HOME/queues/QUEUE.
	Dir string
	// Home is the art state home, used when Dir is empty.
	Home string
	// ReadOnly opens for inspection: nothing is written, created or locked.
	ReadOnly bool
	// Ctx bounds connecting to a remote backend (default: no bound but the
	// backend's own timeouts).
	Ctx context.Context
	// LockTimeout bounds the file backend's wait for its append lock
	// (default file.DefaultLockTimeout).
	LockTimeout time.Duration
	// Lease is the worker lease; a NATS backend also rides out a server
	// outage for that long before failing an operation (default 30s).
	Lease time.Duration
}

// QueueDir is the file backend's directory for c.
func (c Config) QueueDir() (string, error) {
	return file.Location{Queue: c.Queue, Dir: c.Dir, Home: c.Home}.Path()
}

// Open opens the backend c names.
func Open(c Config) (queue.Backend, error) {
	switch {
	case c.Backend == "" || c.Backend == "file":
		dir, err := c.QueueDir()
		if err != nil {
			return nil, err
		}
		return file.Open(dir, file.Options{ReadOnly: c.ReadOnly, LockTimeout: c.LockTimeout})
	case natsq.IsURL(c.Backend):
		if c.Dir != "" {
			return nil, exitcode.Field(exitcode.Usage, "Dir", "", "a NATS queue has no directory; name it with %s", exitcode.Ref("Queue"))
		}
		name := cmp.Or(c.Queue, "default")
		if err := file.ValidQueue(name); err != nil {
			return nil, err
		}
		ctx := c.Ctx
		if ctx == nil {
			ctx = context.Background()
		}
		b, err := natsq.Open(ctx, c.Backend, name, natsq.Options{ReadOnly: c.ReadOnly, RetryTimeout: c.Lease})
		if err != nil {
			return nil, err // a nil *Backend must not become a non-nil queue.Backend
		}
		return b, nil
	case strings.Contains(c.Backend, "://"):
		return nil, exitcode.Field(exitcode.Usage, "Backend", c.Backend, "unknown scheme (want file or nats://HOST:PORT)")
	}
	return nil, exitcode.Field(exitcode.Usage, "Backend", c.Backend, "unknown backend (want file or nats://HOST:PORT)")
}
