//go:build linux

package stage

import (
	"errors"

	"golang.org/x/sys/unix"
)

// dropCaps empties the bounding set (so not even a setuid-root program or
// uid 0's execve can regain a capability), the ambient set, and the
// inheritable, permitted and effective sets, all except keep. Dropping
// the bounding set needs CAP_SETPCAP: an unprivileged task has none to
// drop and its execve cannot gain any under no_new_privs, so EPERM there
// is not a failure.
func dropCaps(keep []int) error {
	kept := map[int]bool{}
	for _, c := range keep {
		kept[c] = true
	}
	for c := 0; c <= 63; c++ {
		if kept[c] {
			continue
		}
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the kernel's last capability
		}
		if errors.Is(err, unix.EPERM) {
			if HasAnyCap() {
				return err
			}
			break
		}
		if err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if len(keep) > 0 {
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			return err
		}
	}
	var set [2]uint32
	for _, c := range keep {
		set[c/32] |= 1 << (c % 32)
	}
	for i := range data {
		data[i].Effective &= set[i]
		data[i].Permitted &= set[i]
		data[i].Inheritable = data[i].Permitted
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return err
	}
	for _, c := range keep { // so a non-root program keeps them across execve
		_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, uintptr(c), 0, 0)
	}
	return nil
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

// HasAnyCap reports whether the calling thread has any effective capability.
func HasAnyCap() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) != nil {
		return false
	}
	return data[0].Effective|data[1].Effective != 0
}
