//go:build linux

package stage

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// capDrop is the capability drop of a task, prepared by its parent for
// the child to apply (Child.dropCaps): it empties the bounding set (so not
// even a setuid-root program or uid 0's execve can regain a capability),
// the ambient set, and the inheritable, permitted and effective sets, all
// except keep. Dropping the bounding set needs CAP_SETPCAP: an
// unprivileged task has none to drop and its execve cannot gain any under
// no_new_privs, so EPERM there is not a failure (anyCap says which case it
// is). The child has its parent's credentials (fork copies them), so the
// sets to install are computed here, from the calling thread's.
type capDrop struct {
	keep   uint64 // bit c: keep capability c
	anyCap bool   // the calling thread has an effective capability
	hdr    unix.CapUserHeader
	data   [2]unix.CapUserData
}

func newCapDrop(keep []int) (*capDrop, error) {
	d := &capDrop{hdr: unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}}
	var cur [2]unix.CapUserData
	if err := unix.Capget(&d.hdr, &cur[0]); err != nil {
		return nil, err
	}
	d.anyCap = cur[0].Effective|cur[1].Effective != 0
	var set [2]uint32
	for _, c := range keep {
		if c < 0 || c > 63 {
			return nil, fmt.Errorf("capability %d out of range", c)
		}
		d.keep |= 1 << c
		set[c/32] |= 1 << (c % 32)
	}
	for i := range d.data {
		d.data[i].Effective = cur[i].Effective & set[i]
		d.data[i].Permitted = cur[i].Permitted & set[i]
		d.data[i].Inheritable = d.data[i].Permitted
	}
	return d, nil
}

// HasCap reports whether the calling thread has capability c effective.
func HasCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) != nil {
		return false
	}
	return data[c/32].Effective&(1<<(c%32)) != 0
}

// DropBoundingSet empties the bounding set of every thread of this
// process except the capabilities in keep (bit c: capability c), as a
// capability drop with those KeepCaps would: for a pooled supervisor
// whose every task drops its capabilities, so that the task's own process
// finds nothing left to drop (capDrop.apply). It changes nothing the
// supervisor does itself — it never executes a program, and its
// permitted and effective sets stay — and each task still checks and
// drops what its bounding set holds. All threads or none: a Go program
// built with cgo (a -race build) cannot change every thread
// (syscall.AllThreadsSyscall), and gets ENOTSUP before anything changed;
// without CAP_SETPCAP, EPERM.
func DropBoundingSet(keep uint64) error {
	for c := uintptr(0); c <= 63; c++ {
		if keep>>c&1 != 0 {
			continue
		}
		in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, c, 0, 0, 0)
		if err == unix.EINVAL {
			return nil // past the kernel's last capability
		}
		if err != nil {
			return err
		}
		if in == 0 {
			continue
		}
		if _, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0); e != 0 {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, e)
		}
	}
	return nil
}
