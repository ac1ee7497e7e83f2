package backends

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue/nats/natstest"
)

func TestOpen(t *testing.T) {
	home := t.TempDir()
	cases := []struct {
		name string
		c    Config
		code int
		dir  string // the queue directory a writable open creates
	}{
		{"default queue", Config{Home: home}, 0, filepath.Join(home, "queues", "default")},
		{"named queue", Config{Home: home, Queue: "builds", Backend: "file"}, 0, filepath.Join(home, "queues", "builds")},
		{"dir wins over queue", Config{Home: home, Queue: "x", Dir: filepath.Join(home, "mine")}, 0, filepath.Join(home, "mine")},
		{"bad queue name", Config{Home: home, Queue: "../up"}, exitcode.Usage, ""},
		{"nats has no directory", Config{Home: home, Backend: "nats://127.0.0.1:4222", Dir: home}, exitcode.Usage, ""},
		{"nats bad queue name", Config{Home: home, Backend: "nats://127.0.0.1:4222", Queue: "a.b"}, exitcode.Usage, ""},
		{"unknown scheme", Config{Home: home, Backend: "redis://127.0.0.1:6379"}, exitcode.Usage, ""},
		{"unknown backend", Config{Home: home, Backend: "sqlite"}, exitcode.Usage, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := Open(c.c)
			if got := exitcode.Of(err); got != c.code {
				t.Fatalf("Open(%+v) = %v (exit %d); want exit %d", c.c, err, got, c.code)
			}
			if err != nil {
				return
			}
			defer b.Close()
			if fi, err := os.Stat(c.dir); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("queue directory %s: %v %v; want a 0700 directory", c.dir, fi, err)
			}
		})
	}
	// Read-only opens create nothing.
	ro := Config{Home: home, Queue: "ghost", ReadOnly: true}
	b, err := Open(ro)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, err := os.Stat(filepath.Join(home, "queues", "ghost")); !os.IsNotExist(err) {
		t.Errorf("a read-only open created the queue directory")
	}
}

// TestOpenNATS opens a queue on a real embedded nats-server through the same
// Config the CLI builds, and proves an unreachable server is the tool's own
// failure (125), not a usage error.
func TestOpenNATS(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	b, err := Open(Config{Backend: srv.URL(), Queue: "builds", Lease: 2 * time.Second})
	if err != nil {
		t.Fatalf("Open(%s) = %v", srv.URL(), err)
	}
	defer b.Close()
	if b.ReadOnly() {
		t.Errorf("a writable open is read-only")
	}
	_, err = Open(Config{Backend: "nats://127.0.0.1:1", Queue: "builds", Lease: time.Second})
	if got := exitcode.Of(err); got != exitcode.Internal {
		t.Errorf("Open(unreachable) = %v (exit %d); want exit 125", err, got)
	}
}
