//go:build linux

package stage

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// LoopbackUp brings up lo of the calling process's network namespace
// (a fresh one has it down): 127.0.0.1 and, where IPv6 is enabled, ::1
// then work, and nothing else is there. It needs CAP_NET_ADMIN in the
// namespace's owning user namespace. One ioctl, no ip(8).
func LoopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("lo: socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("lo: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo: get flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo: up: %w", err)
	}
	return nil
}
