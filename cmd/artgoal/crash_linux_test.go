package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/goal"
)

// The crash test needs a writer stopped exactly between "temp file written
// and fsynced" and "renamed over the journal", then killed with SIGKILL.
// Instead of a test hook in the product, the test binary re-executes itself
// as "artgoal-paused-at-rename": an artgoal that first installs a seccomp
// filter turning every rename(2) into a user notification, and hands the
// listener to the test over fd 3. Its rename then blocks in the kernel
// until the test answers; the test inspects the directory, then SIGKILLs
// it. The product code path is exactly the one users run.
func init() {
	commands["artgoal-paused-at-rename"] = func() {
		if err := pauseRenames(); err != nil {
			fmt.Fprintf(os.Stderr, "seccomp unavailable: %v\n", err)
			os.Exit(125)
		}
		os.Exit(run())
	}
}

// renameCalls are the syscalls os.Rename can use on this architecture.
func renameCalls() (arch uint32, nrs []uint32, ok bool) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, []uint32{82 /* rename */, unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2}, true
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, []uint32{unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2}, true
	}
	return 0, nil, false
}

func pauseRenames() error {
	arch, nrs, ok := renameCalls()
	if !ok {
		return fmt.Errorf("no syscall table for %s", runtime.GOARCH)
	}
	const jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4}, // seccomp_data.arch
		{Code: jeq, Jt: 1, K: arch},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
	}
	for i, nr := range nrs {
		prog = append(prog, unix.SockFilter{Code: jeq, Jt: uint8(len(nrs) - i), K: nr})
	}
	prog = append(prog,
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_USER_NOTIF},
	)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH)
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	// Hand the listener to the test on fd 3, then drop our copies.
	if err := unix.Sendmsg(3, []byte{1}, unix.UnixRights(int(fd)), nil, 0); err != nil {
		return fmt.Errorf("send listener: %w", err)
	}
	unix.Close(int(fd))
	unix.Close(3)
	return nil
}

// pausedWriter is an artgoal process stopped at its first rename.
type pausedWriter struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	nr     int32
}

// startPaused runs artgoal-paused-at-rename ARGS and returns once the
// process is blocked in rename(2), or fails the test if it exits first.
func startPaused(t *testing.T, home string, args ...string) *pausedWriter {
	t.Helper()
	bin, err := exec.LookPath("artgoal-paused-at-rename")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	child := os.NewFile(uintptr(pair[1]), "listener-socket")
	p := &pausedWriter{cmd: exec.Command(bin, args...)}
	p.cmd.Env = append(os.Environ(), "ART_HOME="+home, "GORACE="+systest.NoExitSleep())
	p.cmd.Dir = home
	p.cmd.Stderr = &p.stderr
	p.cmd.ExtraFiles = []*os.File{child}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	defer unix.Close(pair[0])

	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(pair[0], buf, oob, 0)
	if err != nil || oobn == 0 {
		p.cmd.Wait()
		if strings.Contains(p.stderr.String(), "seccomp unavailable") {
			t.Skipf("cannot pause a writer at rename here: %s", p.stderr.String())
		}
		t.Fatalf("no seccomp listener from the writer (%v): %s", err, p.stderr.String())
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		t.Fatal(err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil {
		t.Fatal(err)
	}
	listener := fds[0]
	// Keep the listener open until the writer is dead: closing it would
	// make the blocked rename fail with ENOSYS instead of staying paused.
	t.Cleanup(func() { unix.Close(listener) })

	pfd := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, 30_000)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 || pfd[0].Revents&unix.POLLIN == 0 {
			p.cmd.Process.Kill()
			p.cmd.Wait()
			t.Fatalf("writer did not reach rename (poll %d, %v, revents %#x): %s", n, err, pfd[0].Revents, p.stderr.String())
		}
		break
	}
	var notif [80]byte // struct seccomp_notif: id u64, pid u32, flags u32, seccomp_data
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&notif[0]))); errno != 0 {
		t.Fatalf("receive notification: %v", errno)
	}
	p.nr = int32(binary.NativeEndian.Uint32(notif[16:]))
	return p
}

// kill SIGKILLs the paused writer and checks that SIGKILL is what ended it.
func (p *pausedWriter) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("writer ended with %v, not SIGKILL: %s", p.cmd.ProcessState, p.stderr.String())
	}
}

// temps lists the temp files left in the goals directory.
func temps(t *testing.T, home string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(home, "goals"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.Contains(e.Name(), ".json") && !strings.HasSuffix(e.Name(), ".json") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestCrashBetweenTempAndRename kills a writer of every kind of mutation
// after its temp file is written and fsynced and before the rename, and
// proves: the journal is still the old one byte for byte (or absent for a
// new goal), the temp file holds the complete new journal (so the kill
// really landed in that window), readers ignore it, the same mutation then
// succeeds, and that success removes the leftover.
func TestCrashBetweenTempAndRename(t *testing.T) {
	closure := `{"apiVersion":"art/v1alpha1","kind":"GoalClosure","outcome":"done","cleanup":[],"debt":[],"risks":[],"next":[]}`
	tests := []struct {
		name  string
		setup func(t *testing.T, home string) // leaves g at some revision
		args  []string                        // the mutation
	}{
		{"new", func(*testing.T, string) {}, []string{"new", "g", "--title", "Crash", "--check", "a"}},
		{"check", walkTo(0), []string{"check", "g", "--rev", "1", "--item", "0", "--evidence", "note:x"}},
		{"receipt", walkTo(3), []string{"receipt", "g", "--rev", "5", "--summary", "s", "--evidence", "note:x"}},
		{"put", walkTo(2), []string{"put", "g", "--rev", "4", "--file", "doc.json"}},
		{"close", walkTo(8), []string{"close", "g", "--rev", "10", "--closure", "closure.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, "closure.json"), []byte(closure), 0o600); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, home)
			journal := filepath.Join(home, "goals", "g.json")
			before, beforeErr := os.ReadFile(journal)
			if tt.name != "new" {
				if beforeErr != nil {
					t.Fatal(beforeErr)
				}
				if err := os.WriteFile(filepath.Join(home, "doc.json"), before, 0o600); err != nil {
					t.Fatal(err)
				}
			}

			p := startPaused(t, home, tt.args...)
			// Paused inside rename(2): the journal is untouched, and the
			// temp file already holds the whole new journal, fsynced.
			now, err := os.ReadFile(journal)
			if tt.name == "new" {
				if !os.IsNotExist(err) {
					t.Fatalf("journal exists before the rename: %v", err)
				}
			} else if !bytes.Equal(now, before) {
				t.Fatal("journal changed before the rename")
			}
			left := temps(t, home)
			if len(left) != 1 {
				t.Fatalf("temp files while paused: %v; want one", left)
			}
			tmp, err := os.ReadFile(filepath.Join(home, "goals", left[0]))
			if err != nil {
				t.Fatal(err)
			}
			next, err := goal.DecodeJournal(tmp)
			if err != nil {
				t.Fatalf("temp file is not a complete journal: %v", err)
			}
			p.kill(t)

			// After SIGKILL: old journal (or none), the temp file left.
			after, err := os.ReadFile(journal)
			if tt.name == "new" {
				if !os.IsNotExist(err) {
					t.Fatalf("killed new left a journal: %v", err)
				}
			} else if !bytes.Equal(after, before) {
				t.Fatal("journal is not the old one after the kill")
			}
			if got := temps(t, home); len(got) != 1 {
				t.Fatalf("temp files after the kill: %v", got)
			}
			list := artgoalOK(t, home, "list")
			if want := map[bool]int{true: 0, false: 1}[tt.name == "new"]; bytes.Count(list, []byte("\n")) != want {
				t.Fatalf("list after the crash:\n%s", list)
			}

			// The same mutation now succeeds, is what the dead writer would
			// have written (up to its timestamps), and removes the leftover.
			out := artgoalOK(t, home, tt.args...)
			j, err := goal.DecodeJournal(out)
			if err != nil {
				t.Fatal(err)
			}
			if j.Revision != next.Revision || j.Phase != next.Phase || j.Closed() != next.Closed() {
				t.Errorf("retry gave revision %d phase %s closed %v; the killed writer had %d %s %v",
					j.Revision, j.Phase, j.Closed(), next.Revision, next.Phase, next.Closed())
			}
			if got := temps(t, home); len(got) != 0 {
				t.Errorf("leftover temp files after a successful write: %v", got)
			}
		})
	}
}
