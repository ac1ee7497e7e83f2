package file

import (
	"cmp"
	"errors"
	"path/filepath"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/queue"
)

// Location names a file queue as artq's flags do: Dir (artq --dir), else
// Home/queues/Queue. It lives here rather than beside every backend so that
// a reader of file queues only (a goal journal's evidence) links no other
// backend. Its refusals are *exitcode.FieldError naming "Queue".
type Location struct {
	// Queue is the queue's name (default "default").
	Queue string
	// Dir is the queue directory; empty means Home/queues/Queue.
	Dir string
	// Home is the art state home, used when Dir is empty.
	Home string
}

// Path is the queue directory l names.
func (l Location) Path() (string, error) {
	if l.Dir != "" {
		return l.Dir, nil
	}
	name := cmp.Or(l.Queue, "default")
	if err := ValidQueue(name); err != nil {
		return "", err
	}
	return filepath.Join(l.Home, "queues", name), nil
}

// ValidQueue is queue.ValidName for a queue's name, as a FieldError naming
// the field "Queue".
func ValidQueue(name string) error {
	err := queue.ValidName("queue", name)
	var fe *jsonx.FieldError
	if errors.As(err, &fe) {
		return exitcode.Field(exitcode.Usage, "Queue", "", "%s", fe.Msg)
	}
	return err
}
