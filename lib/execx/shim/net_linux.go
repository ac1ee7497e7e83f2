//go:build linux

package shim

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/stage"
)

// setupNet prepares the task's network namespace before the task exists:
// lo up, and for network allow the proxy's listener on 127.0.0.1, sent to
// the runner (which accepts on it, outside the namespace) and closed
// here. Only the task's namespace has the listener; the supervisor holds
// no copy.
func setupNet(s *Spec) error {
	if s.Loopback {
		if err := stage.LoopbackUp(); err != nil {
			return err
		}
	}
	if s.ProxyPort == 0 {
		return nil
	}
	defer unix.Close(NetFD)
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("proxy listener: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: s.ProxyPort, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("proxy listener 127.0.0.1:%d: %w", s.ProxyPort, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		return fmt.Errorf("proxy listener: %w", err)
	}
	if err := unix.Sendmsg(NetFD, []byte{'L'}, unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("proxy listener: send to the runner: %w", err)
	}
	return nil
}

// RecvFD receives one descriptor sent with SCM_RIGHTS on the socket fd.
func RecvFD(fd int) (int, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		_, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, err
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return -1, fmt.Errorf("no descriptor received")
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			for _, f := range fds {
				unix.Close(f)
			}
			return -1, fmt.Errorf("want one descriptor, got %d", len(fds))
		}
		return fds[0], nil
	}
}
