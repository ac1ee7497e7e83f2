package execx

import "runtime"

// Capabilities is what this machine can enforce, as `artexec isolation`
// prints it. It is measured (the kernel is asked, namespaces are really
// created), not inferred from version numbers.
type Capabilities struct {
	OS         string        `json:"os"`
	Landlock   LandlockCaps  `json:"landlock"`
	Namespaces NamespaceCaps `json:"namespaces"`
	Seccomp    bool          `json:"seccomp"`
	Seatbelt   bool          `json:"seatbelt"`
	Subreaper  bool          `json:"subreaper"`
	Backends   []BackendCaps `json:"backends"`
	// Networks says, per network mode, whether a task can have it here
	// (loopback and allow need a network namespace: as root, or through
	// a user namespace) and the layers it adds.
	Networks []NetworkCaps `json:"networks"`
}

// NetworkCaps is one network mode's availability.
type NetworkCaps struct {
	Mode      NetworkMode `json:"mode"`
	Available bool        `json:"available"`
	Enforces  []string    `json:"enforces"`
}

// LandlockCaps reports the kernel's Landlock ABI and what a landlock run
// enforces with it.
type LandlockCaps struct {
	ABI      int      `json:"abi"`
	Enforces []string `json:"enforces"`
}

// NamespaceCaps reports which namespaces a clone with a new user
// namespace can create here (strict needs all six).
type NamespaceCaps struct {
	User  bool   `json:"user"`
	PID   bool   `json:"pid"`
	Net   bool   `json:"net"`
	IPC   bool   `json:"ipc"`
	UTS   bool   `json:"uts"`
	Mount bool   `json:"mount"`
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
