//go:build linux

package execx

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/execx/shim"
	"github.com/art-runtime/art/lib/execx/stage"
	"github.com/art-runtime/art/lib/exitcode"
)

// planNetwork decides how the run gets its network mode (NetworkMode):
// which namespace the supervisor is started in, whether it brings lo up
// and opens the proxy's listener, and whether Landlock's TCP rule stays.
func (ip *isoPlan) planNetwork(p *Policy) {
	mode := p.NetworkMode()
	ip.network = mode
	if ip.backend == IsolationSeatbelt { // on Linux only ever best effort: nothing of it is enforced
		ip.network = NetworkHost
		return
	}
	switch mode {
	case NetworkHost:
		ip.netOpen = ip.landlock > 0
		return
	case NetworkNone:
		// Landlock refuses every TCP connect and bind; without its
		// network rights (ABI < 4), or without Landlock, a namespace of
		// the task's own whose lo stays down.
		ip.netNS = ip.namespaces || ip.landlock < 4
	case NetworkLoopback, NetworkAllow:
		ip.netNS, ip.loopback, ip.netOpen = true, true, ip.landlock > 0
		ip.proxy = mode == NetworkAllow
	}
	if ip.netNS && !ip.namespaces && !(os.Geteuid() == 0 && stage.HasCap(unix.CAP_NET_ADMIN)) {
		ip.netUser = true // a user namespace of its own owns the network namespace
	}
}

// dropNamespaces is a best-effort start without the namespaces the
// kernel refused (why): what the run then goes without is named in
// dropped, and its network falls back to the narrowest it can still
// have: Landlock's TCP rule where there is one.
func (ip *isoPlan) dropNamespaces(pl *plan, why error) {
	switch {
	case ip.namespaces:
		ip.dropped = append(ip.dropped, "namespaces: "+why.Error())
	case ip.mountNS && !ip.netNS:
		ip.dropped = append(ip.dropped, "namespace.mount: "+why.Error())
	default:
		layer := "namespace.net"
		if ip.loopback {
			layer = "network." + string(ip.network)
		}
		ip.dropped = append(ip.dropped, layer+": "+why.Error())
	}
	ip.namespaces, ip.mountNS, ip.view = false, false, stage.View{}
	if ip.netNS {
		ip.netNS, ip.netUser, ip.loopback, ip.proxy, ip.netOpen = false, false, false, false, false
		ip.network = NetworkNone
		if ip.landlock < 4 {
			ip.network = NetworkHost
		}
	}
	ip.recompute(pl)
}

// namespaceWhat names the isolation a failed namespace start refuses.
func (ip *isoPlan) namespaceWhat() string {
	switch {
	case ip.namespaces:
		return "strict"
	case ip.netNS:
		return "network " + string(ip.network) + " (a network namespace)"
	}
	return "landlock (read-only mount view)"
}

// netClone adds the network namespace (and, for netUser, the user
// namespace that owns it) to the supervisor's clone flags. CAP_NET_ADMIN
// in that namespace brings lo up; the exec stage drops it with the rest.
func netClone(sys *syscall.SysProcAttr, ip *isoPlan) {
	if !ip.netNS {
		return
	}
	sys.Cloneflags |= syscall.CLONE_NEWNET
	if ip.netUser {
		sys.Cloneflags |= syscall.CLONE_NEWUSER
		if sys.AmbientCaps == nil {
			sys.AmbientCaps = nsCaps()
		}
	}
	if ip.loopback && sys.AmbientCaps != nil {
		sys.AmbientCaps = append(sys.AmbientCaps, unix.CAP_NET_ADMIN)
	}
}

// proxyPair is the socket pair over which a supervisor hands the runner
// the listener it made in the task's network namespace (network allow).
func proxyPair() (mine, theirs *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, exitcode.Errorf(exitcode.Internal, "proxy socket pair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "proxy"), os.NewFile(uintptr(fds[1]), "proxy-supervisor"), nil
}

// recvListener takes the listening socket the supervisor sent on f (it
// sends it before reporting the task started, so it is already there).
func recvListener(f *os.File) (*os.File, error) {
	fd, err := shim.RecvFD(int(f.Fd()))
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "network allow: the supervisor's listener: %w", err)
	}
	return os.NewFile(uintptr(fd), "proxy-listener"), nil
}
