package execx

import "runtime"

// Capabilities is what this machine can enforce, as `artexec isolation`
// prints it. It is measured (the kernel is asked, namespaces are really
// created), not inferred from version numbers.
type Capabilities struct {
	OS         string        `json:"os"`
	Landlock   LandlockCaps  `json:"landlock"`
	Namespaces NamespaceCaps `json:"namespaces"`
	Seatbelt   bool          `json:"seatbelt"`
	Subreaper  bool          `json:"subreaper"`
	Backends   []BackendCaps `json:"backends"`
}

// LandlockCaps reports the kernel's Landlock ABI and what a landlock run
// enforces with it.
type LandlockCaps struct {
	ABI      int      `json:"abi"`
	Enforces []string `json:"enforces"`
}

// NamespaceCaps reports which namespaces an unprivileged clone can create
// here (strict needs all three together).
type NamespaceCaps struct {
	User  bool   `json:"user"`
	PID   bool   `json:"pid"`
	Net   bool   `json:"net"`
	Error string `json:"error,omitempty"`
}

// BackendCaps says whether an isolation backend can run here without best
// effort, and what it would enforce.
type BackendCaps struct {
	Backend   Isolation `json:"backend"`
	Available bool      `json:"available"`
	Enforces  []string  `json:"enforces"`
}

func newCapabilities() Capabilities {
	return Capabilities{OS: runtime.GOOS, Landlock: LandlockCaps{Enforces: []string{}}}
}
