package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDiskFull fills a small tmpfs under a queue and proves that an append
// that does not fit fails with a clear error and exit 125, leaving the log
// byte-for-byte as it was; that a worker and a compaction on a full disk
// fail the same way; and that everything works again once space is freed.
// It needs root (to mount) and is skipped otherwise. The tmpfs is 512 KiB,
// half of it ballast that is freed before the final drain.
func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=512k,mode=0700"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	dir := filepath.Join(mnt, "q")
	ws := t.TempDir()
	logPath := filepath.Join(dir, "events.log")
	big := strings.Repeat("x", 12<<10)
	// Ballast, freed at the end so the drain that follows has room.
	if err := os.WriteFile(filepath.Join(mnt, "ballast"), make([]byte, 256<<10), 0o600); err != nil {
		t.Fatal(err)
	}

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
	expectFull := func(what string, code int, out string, before []byte) {
		t.Helper()
		if code != 125 || !strings.Contains(out, "no space left on device") {
			t.Fatalf("%s on a full disk: exit %d, %q; want 125 naming the full disk", what, code, out)
		}
		after, _ := os.ReadFile(logPath)
		if !bytes.Equal(before, after) {
			t.Fatalf("%s on a full disk changed the log (%d → %d bytes)", what, len(before), len(after))
		}
	}

	// Enqueue until the disk is full.
	acked := 0
	for i := 0; ; i++ {
		if i == 100 {
			t.Fatal("the tmpfs never filled")
		}
		before, _ := os.ReadFile(logPath)
		code, out := run("enqueue", "-o", "text", "--", "true", big)
		if code == 0 {
			acked++
			continue
		}
		expectFull("enqueue", code, out, before)
		break
	}
	if acked == 0 {
		t.Fatal("nothing fit on the disk")
	}
	// Take the last bytes too, so that even small records cannot fit.
	filler, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := filler.Write(make([]byte, 512)); err != nil {
			break
		}
	}
	filler.Close()

	// The log is intact: it replays and every acknowledged task is there.
	if code, out := run("fsck"); code != 0 || !strings.Contains(out, `"ok":true`) {
		t.Fatalf("fsck on the full disk: exit %d: %s", code, out)
	}
	if code, out := run("status", "--summary"); code != 0 || !strings.Contains(out, `"queued":`) {
		t.Fatalf("status on the full disk: exit %d: %s", code, out)
	}
	// A compaction cannot write its snapshot: nothing changes.
	before, _ := os.ReadFile(logPath)
	code, out := run("compact")
	expectFull("compact", code, out, before)
	if _, err := os.Stat(filepath.Join(dir, "snapshot.json")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a failed compaction left a snapshot")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if name := e.Name(); name != "events.log" && name != "lock" && name != "workers" {
			t.Errorf("a failed compaction left %s behind", name)
		}
	}
	// A worker stops with 125 at the first append that does not fit (small
	// records may still fit in the log's last page). What it appended before
	// stays, nothing is torn, and its task is left to recovery.
	code, out = run("work", "--drain", "--allow", "true", "--workspace", ws)
	if code != 125 || !strings.Contains(out, "no space left on device") {
		t.Fatalf("work on a full disk: exit %d, %q; want 125 naming the full disk", code, out)
	}
	after, _ := os.ReadFile(logPath)
	if !bytes.HasPrefix(after, before) {
		t.Fatal("work on a full disk rewrote the log")
	}
	if code, out := run("fsck"); code != 0 || strings.Contains(out, "torn_tail") {
		t.Fatalf("fsck after the failed worker: exit %d: %s", code, out)
	}

	// Free space: everything works again.
	os.Remove(filepath.Join(mnt, "filler"))
	os.Remove(filepath.Join(mnt, "ballast"))
	if code, out := run("work", "--drain", "--allow", "true", "--workspace", ws); code != 0 {
		t.Fatalf("work after freeing space: exit %d: %s", code, out)
	}
	code, out = run("status", "--summary")
	if code != 0 || !strings.Contains(out, `"succeeded":`) || strings.Contains(out, `"succeeded":0`) {
		t.Fatalf("status after the drain: %s", out)
	}
	if code, out := run("fsck"); code != 0 {
		t.Fatalf("fsck after the drain: exit %d: %s", code, out)
	}
	t.Logf("%d tasks fit before the disk filled", acked)
}

// TestOutputDirFull: --output-dir on a full filesystem does not stop the
// result from being recorded: the worker appends the trace (output_saved
// false and the reason) and the terminal event, exits 0, and no later
// worker runs the finished command again. Needs root (to mount).
func TestOutputDirFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	// Fill it: only a few bytes are left.
	os.WriteFile(filepath.Join(mnt, "ballast"), make([]byte, 60<<10), 0o600)
	dir, ws := filepath.Join(t.TempDir(), "q"), t.TempDir()
	out := filepath.Join(mnt, "out")
	runs := filepath.Join(ws, "runs")
	if b, err := artqCmd(dir, "enqueue", "--id", "x", "--", "sh", "-c", "echo run >> "+runs+"; head -c 100000 /dev/zero").CombinedOutput(); err != nil {
		t.Fatalf("enqueue: %v: %s", err, b)
	}
	for i := range 3 {
		b, err := artqCmd(dir, "work", "--drain", "--allow", "sh", "--workspace", ws, "--output-dir", out).CombinedOutput()
		if err != nil {
			t.Fatalf("worker %d on a full --output-dir: %v: %s", i, err, b)
		}
	}
	if data, _ := os.ReadFile(runs); string(data) != "run\n" {
		t.Fatalf("the command ran %q; want once", data)
	}
	q, _ := inspect(t, dir)
	ts, err := q.Status(context.Background(), "x")
	if err != nil || ts.State != "succeeded" {
		t.Fatalf("x = %+v, %v; want succeeded", ts, err)
	}
	logData, _ := os.ReadFile(filepath.Join(dir, "events.log"))
	if !bytes.Contains(logData, []byte(`"output_saved":false,"output_error":`)) || !bytes.Contains(logData, []byte("no space left on device")) {
		t.Errorf("the trace does not say the output was not saved and why:\n%s", logData)
	}
}
