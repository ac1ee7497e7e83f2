package fsx

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The durability rules (docs/architecture.md, "Durability rules,
// everywhere") are about syscalls a kill -9 soak cannot see: a dying
// process loses nothing the kernel already has, synced or not; only a
// machine losing power tells. So this test records the syscalls themselves
// with strace and checks their order: the temp file's data synced before the
// rename, the directory synced after it, and an append's data synced before
// Sync returns.

// straceChild runs the writes under test when the test binary is started by
// TestSyncsAtTheSyscallLevel; otherwise it does nothing.
func TestStraceChild(t *testing.T) {
	dir := os.Getenv("FSX_STRACE_DIR")
	if dir == "" {
		t.Skip("run by TestSyncsAtTheSyscallLevel")
	}
	if err := WriteFile(filepath.Join(dir, "state.json"), []byte("{}\n"), FileMode); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLog(filepath.Join(dir, "events.log"), LogOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Append([]byte("one record\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
}

func TestSyncsAtTheSyscallLevel(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("strace is not installed (.ci/run installs it)")
		}
		t.Skip("strace is not installed")
	}
	dir := t.TempDir()
	trace := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(strace, "-f", "-qq", "-y", "-o", trace,
		"-e", "trace=fsync,fdatasync,rename,renameat,renameat2,pwrite64,write",
		os.Args[0], "-test.run=^TestStraceChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "FSX_STRACE_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "PTRACE_TRACEME") || strings.Contains(string(out), "Operation not permitted") {
			t.Skipf("strace cannot trace here: %s", out)
		}
		t.Fatalf("strace: %v\n%s", err, out)
	}
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Each event is (syscall, the path strace -y shows for its fd or the
	// rename's target).
	type ev struct{ call, path string }
	var evs []ev
	fdPath := regexp.MustCompile(`^(?:\d+\s+)?(\w+)\(\d+<([^>]*)>`)
	ren := regexp.MustCompile(`^(?:\d+\s+)?(rename\w*)\(.*"([^"]+)"\s*(?:, \d+)?\)\s*=\s*0`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if m := ren.FindStringSubmatch(l); m != nil {
			evs = append(evs, ev{"rename", m[2]})
		} else if m := fdPath.FindStringSubmatch(l); m != nil && strings.HasPrefix(m[2], dir) {
			evs = append(evs, ev{m[1], m[2]})
		}
	}
	find := func(from int, call, path string, prefix bool) int {
		for i := from; i < len(evs); i++ {
			if evs[i].call == call && (evs[i].path == path || prefix && strings.HasPrefix(evs[i].path, path)) {
				return i
			}
		}
		return -1
	}
	state := filepath.Join(dir, "state.json")
	// WriteFile: data fsync'd in the temp file, then the rename onto the
	// name, then the directory fsync'd.
	sync := find(0, "fsync", state, true)
	rename := find(0, "rename", state, false)
	dirSync := find(rename+1, "fsync", dir, false)
	if sync < 0 || rename < 0 || sync > rename || dirSync < 0 {
		t.Errorf("WriteFile: want fsync(temp) < rename(temp, %s) < fsync(%s); got fsync at %d, rename at %d, dir fsync at %d in %v", state, dir, sync, rename, dirSync, evs)
	}
	if sync >= 0 && evs[sync].path == state {
		t.Errorf("WriteFile synced %s itself, not the temp file before the rename: %v", state, evs)
	}
	// Append then Sync: the record written, then fdatasync of the log.
	log := filepath.Join(dir, "events.log")
	w := find(0, "write", log, false)
	ds := find(w+1, "fdatasync", log, false)
	if w < 0 || ds < 0 {
		t.Errorf("Log: want write(%s) then fdatasync(%s); got write at %d, fdatasync at %d in %v", log, log, w, ds, evs)
	}
}
