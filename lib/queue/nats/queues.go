package natsq

import (
	"context"
	"sort"
	"strings"
)

// Exists reports whether the queue's stream exists: a read-only backend
// opened on a missing stream reads as empty, and a reader that must tell
// "no such queue" from "no tasks" asks here.
func (b *Backend) Exists(ctx context.Context) (bool, error) { return b.streamExists(ctx) }

// Queues lists the queues on the server: the streams named ART_<queue>,
// sorted by name.
func (b *Backend) Queues(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	l := b.js.StreamNames(ctx)
	var out []string
	for name := range l.Name() {
		if q, ok := strings.CutPrefix(name, "ART_"); ok && q != "" {
			out = append(out, q)
		}
	}
	if err := l.Err(); err != nil {
		return nil, b.serverErr("list streams", err)
	}
	sort.Strings(out)
	return out, nil
}
