//go:build linux

package shim

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// ChildrenOf lists pid's children from /proc/PID/task/*/children (a child
// belongs to the thread that forked it, and an orphan to whichever thread
// of its new reaper the kernel picked, so every thread is read). It reads
// through one directory descriptor into one buffer rather than globbing
// paths: it runs whenever a task may have left orphans.
func ChildrenOf(pid int) []int { return childrenIn("/proc/" + strconv.Itoa(pid) + "/task") }

// childrenIn is ChildrenOf for the task directory of a process in /proc.
func childrenIn(taskDir string) []int {
	// Opened blocking and wrapped, not os.Open: a supervisor that never
	// opens a file through os never starts the runtime's network poller,
	// and then no thread is woken to poll whenever it blocks in a syscall.
	dfd, err := unix.Open(taskDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	dir := os.NewFile(uintptr(dfd), "task")
	defer dir.Close()
	tids, _ := dir.Readdirnames(-1)
	var out []int
	var buf [4096]byte
	for _, tid := range tids {
		fd, err := unix.Openat(int(dir.Fd()), tid+"/children", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var data []byte
		for {
			n, err := unix.Read(fd, buf[:])
			if n <= 0 || err != nil {
				break
			}
			data = append(data, buf[:n]...)
		}
		unix.Close(fd)
		for _, field := range bytes.Fields(data) {
			if c, err := strconv.Atoi(string(field)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// Descendants lists every process below pid, breadth first. The snapshot
// can miss a process forked while it is taken; callers loop.
func Descendants(pid int) []int { return descend(ChildrenOf(pid)) }

// descendantsOfSelf is Descendants of this process, through /proc/self:
// right in a PID namespace of its own too, where this process's pid is
// not its pid in the /proc it sees (a pooled supervisor's).
func descendantsOfSelf() []int { return descend(childrenIn("/proc/self/task")) }

// descend lists the processes below children, and children.
func descend(children []int) []int {
	var out []int
	queue := children
	seen := map[int]bool{}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
		queue = append(queue, ChildrenOf(p)...)
	}
	return out
}
