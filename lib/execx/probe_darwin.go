//go:build darwin

package execx

import "os"

// Probe reports what this machine can enforce: on macOS, sandbox-exec.
func Probe() Capabilities {
	c := newCapabilities()
	_, err := os.Stat(sandboxExec)
	c.Seatbelt = err == nil
	c.Backends = []BackendCaps{
		{Backend: IsolationNone, Available: true, Enforces: []string{}},
		{Backend: IsolationLandlock, Available: false, Enforces: []string{}},
		{Backend: IsolationStrict, Available: false, Enforces: []string{}},
		{Backend: IsolationSeatbelt, Available: c.Seatbelt, Enforces: []string{"seatbelt.network", "seatbelt.fs_write"}},
	}
	c.Networks = []NetworkCaps{
		{Mode: NetworkHost, Available: true, Enforces: []string{}},
		{Mode: NetworkAllow, Available: false, Enforces: []string{}},
		{Mode: NetworkLoopback, Available: false, Enforces: []string{}},
		{Mode: NetworkNone, Available: c.Seatbelt, Enforces: []string{"seatbelt.network"}},
	}
	return c
}

// stopAtExec: no runner starts a child traced on macOS (see probe_linux.go).
func stopAtExec(int) (exitInfo, bool) { return exitInfo{}, false }
