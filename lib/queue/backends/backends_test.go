package backends

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
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
		{"nats not built", Config{Home: home, Backend: "nats://127.0.0.1:4222"}, exitcode.Usage, ""},
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
