package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/art-runtime/art/internal/systest"
)

// TestReadOnlyDir remounts a queue's filesystem read-only (as root,
// permissions would not stop a write: the kernel's EROFS does) and proves
// that every command that writes fails at once with exit 125 and one line
// naming the queue and the cause, that nothing under the queue changes,
// that the read-only commands still answer, and that everything works again
// once the filesystem is writable. Root only (it mounts); skipped otherwise.
func TestReadOnlyDir(t *testing.T) {
	m := systest.MountTmpfs(t, 512<<10)
	dir, ws := m.Path("q"), t.TempDir()
	run := func(args ...string) (int, string) {
		t.Helper()
		out, err := artqCmd(dir, args...).CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	must := func(args ...string) string {
		t.Helper()
		code, out := run(args...)
		if code != 0 {
			t.Fatalf("artq %s: exit %d: %s", strings.Join(args, " "), code, out)
		}
		return out
	}
	// A queue with history: a finished task, a snapshot, a queued task.
	must("enqueue", "--id", "done", "--", "true")
	must("work", "--drain", "--allow", "true", "--workspace", ws)
	must("compact")
	must("enqueue", "--id", "waiting", "--", "true")
	before := systest.Tree(t, dir)

	m.ReadOnly()
	for _, args := range [][]string{
		{"enqueue", "--id", "new", "--", "true"},
		{"enqueue", "--id", "waiting", "--", "true"}, // idempotent, still needs the lock
		{"cancel", "waiting"},
		{"retry", "done"},
		{"work", "--once", "--allow", "true", "--workspace", ws},
		{"work", "--drain", "--allow", "true", "--workspace", ws},
		{"compact"},
	} {
		code, out := run(args...)
		if code != 125 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "artq: error: ") ||
			!strings.Contains(out, dir) || !strings.Contains(out, "read-only file system") {
			t.Errorf("artq %s on a read-only queue: exit %d, %q; want 125 and one line naming %s and the cause",
				strings.Join(args, " "), code, out, dir)
		}
	}
	// Reading needs no write, not even a lock file.
	for _, args := range [][]string{{"status"}, {"status", "waiting"}, {"status", "--summary"}, {"fsck"}, {"log"}} {
		if code, out := run(args...); code != 0 {
			t.Errorf("artq %s on a read-only queue: exit %d: %s", strings.Join(args, " "), code, out)
		}
	}
	if out := must("status", "waiting"); !strings.Contains(out, `"state":"queued"`) {
		t.Errorf("status waiting on the read-only queue: %s", out)
	}
	systest.SameTree(t, "artq on a read-only filesystem", dir, before)

	m.ReadWrite()
	must("enqueue", "--id", "new", "--", "true")
	must("work", "--drain", "--allow", "true", "--workspace", ws)
	if out := must("status", "--summary"); !strings.Contains(out, `"succeeded":3`) {
		t.Errorf("after the filesystem is writable again: %s; want 3 succeeded", out)
	}
	if out := must("fsck"); !strings.Contains(out, `"ok":true`) {
		t.Errorf("fsck after the read-only spell: %s", out)
	}
}
