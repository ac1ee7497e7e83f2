package file

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
)

// holdLockChild takes the append lock of the queue at dir, says so on
// stdout, and holds it until killed.
func holdLockChild(dir string) int {
	b, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := b.lock(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("locked")
	select {}
}

// TestLockTimeoutNamesStoppedHolder: a process that holds the append lock
// and is stopped (SIGSTOP, as Ctrl-Z does) makes a writer fail after its
// lock timeout with exit 125 naming the holder's pid and command, instead
// of blocking forever; fsck names the stopped holder; once the holder is
// gone, writes go through again.
func TestLockTimeoutNamesStoppedHolder(t *testing.T) {
	dir := t.TempDir()
	logWith(t, dir, 1)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "ARTQ_FILETEST_HOLDLOCK="+dir, "GORACE=atexit_sleep_ms=0")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		t.Fatalf("holder said %q", line)
	}
	cmd.Process.Signal(syscall.SIGSTOP)
	defer cmd.Process.Signal(syscall.SIGCONT)
	pid := strconv.Itoa(cmd.Process.Pid)

	w, err := Open(dir, Options{LockTimeout: 200 * time.Millisecond})
	if err == nil {
		w.Close()
		t.Fatal("Open for writing went through a held lock")
	}
	if exitcode.Of(err) != exitcode.Internal || !strings.Contains(err.Error(), "pid "+pid+" (") || !strings.Contains(err.Error(), "stopped") || !strings.Contains(err.Error(), "gave up after lock-timeout 200ms") {
		t.Fatalf("Open = %v (exit %d); want exit 125 naming pid %s, its command and that it is stopped", err, exitcode.Of(err), pid)
	}
	rep, err := open(t, dir, Options{ReadOnly: true}).Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if notes := strings.Join(rep.Notes, "\n"); !strings.Contains(notes, "held by pid "+pid) || !strings.Contains(notes, "stopped") {
		t.Errorf("fsck notes = %q; want the stopped holder named", notes)
	}
	cmd.Process.Kill()
	cmd.Wait()
	w = open(t, dir, Options{LockTimeout: 200 * time.Millisecond})
	appendAll(t, w, enq("after"))
	if h, err := w.LockHolder(); err != nil || h != nil {
		t.Errorf("LockHolder after the holder died = %v, %v; want none", h, err)
	}
}

// TestLockHolderFirstLine: the holder's line is padded to one length (so
// each commit rewrites it in place), and the holder is read from the
// first line even when a longer line of an earlier holder left its tail
// after it.
func TestLockHolderFirstLine(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, Options{})
	defer b.Close()
	if err := b.lock(); err != nil {
		t.Fatal(err)
	}
	defer b.unlock()
	path := filepath.Join(dir, LockName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != holderLen || data[len(data)-1] != '\n' {
		t.Fatalf("lock file holds %d bytes ending %q; want one line of %d", len(data), data[len(data)-1:], holderLen)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`another holder's tail"}` + "\n")
	f.Close()
	h, err := b.LockHolder()
	if err != nil || h == nil || h.PID != os.Getpid() {
		t.Fatalf("LockHolder = %+v, %v; want pid %d", h, err, os.Getpid())
	}
}
