//go:build linux

package stage

import (
	"fmt"

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
	// check: read each capability before dropping it. The calling
	// thread's bounding set lacks CAP_SYS_ADMIN, so it was emptied before
	// (DropBoundingSet: a pooled supervisor's) and most drops would be
	// for nothing; with a full one (a one-shot supervisor) every read
	// would be.
	check bool
	hdr   unix.CapUserHeader
	data  [2]unix.CapUserData
}

func newCapDrop(keep []int) (*capDrop, error) {
	d := &capDrop{hdr: unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}}
	var cur [2]unix.CapUserData
	if err := unix.Capget(&d.hdr, &cur[0]); err != nil {
		return nil, err
	}
	d.anyCap = cur[0].Effective|cur[1].Effective != 0
	if in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, unix.CAP_SYS_ADMIN, 0, 0, 0); err == nil && in == 0 {
		d.check = true
	}
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

// DropBoundingSet empties the calling thread's bounding set but the
// capabilities in keep (bit c: capability c), as a capability drop with
// those KeepCaps would. A pool's forker thread does it for the
// supervisors it starts for tasks that drop their capabilities: they
// inherit it (fork and execve keep the bounding set), so a task's own
// process finds nothing left to drop (capDrop.apply checks before each
// drop; a drop is a new set of credentials, about a microsecond each).
//
// The supervisor itself must keep its capabilities (it builds each
// task's mount view): root's execve gives the new program its bounding
// set joined with its inheritable set (capabilities(7), "Capabilities and
// execution of programs by root"), so the inheritable set is first raised
// to the permitted one — allowed only while those capabilities are still
// in the bounding set — and the supervisor starts with them all, with
// nothing to regain at an execve of its own (it never makes one): its
// tasks' processes set their inheritable set with the rest (capDrop).
//
// The caller holds its goroutine locked to its thread and never unlocks
// it: the thread must end with it, never to run another goroutine, which
// could start a program that is to keep its capabilities. Without
// CAP_SETPCAP (an unprivileged runner) it changes nothing: EPERM.
func DropBoundingSet(keep uint64) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	for i := range data {
		data[i].Inheritable = data[i].Permitted
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return err
	}
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
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	return nil
}
