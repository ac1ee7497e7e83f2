// Package nethook is where lib/execx finds network allow's two parts
// that need networking code: the allowlist's grammar and the egress
// proxy. Package lib/execx/netallow puts them here when it is linked;
// lib/execx itself imports neither, so a program that never runs a task
// under network allow — the artexec binary's plain run — links and
// initialises no networking package (docs/artexec.md, "Two binaries").
package nethook

import (
	"context"
	"os"
	"sync/atomic"

	"github.com/art-runtime/art/lib/netproxy/account"
)

// Config is one task's proxy: its allowlist as the policy spells it
// (checked by Impl.Check), its bounds, and the caller's hooks.
type Config struct {
	Allow          []string
	MaxConnections int
	MaxBytes       int64
	// Resolve resolves a name the allowlist admitted into addresses in
	// text form, as net.Resolver.LookupHost returns them; nil means the
	// system resolver.
	Resolve    func(ctx context.Context, host string) ([]string, error)
	OnDecision func(account.Decision)
}

// Proxy is a running proxy of one task.
type Proxy interface {
	// Stop ends every connection, waits for the proxy and returns its
	// accounting.
	Stop() account.Report
}

// Impl is network allow's implementation.
type Impl struct {
	// Check reports why rule is not an allowlist entry, or nil.
	Check func(rule string) error
	// Covered says whether every destination rule (checked) admits is
	// admitted by one of allow (checked): a narrowing may only keep those.
	Covered func(rule string, allow []string) bool
	// Start serves the task's connections on listener (a listening
	// socket in the task's network namespace) until Stop.
	Start func(listener *os.File, cfg Config) (Proxy, error)
}

var impl atomic.Pointer[Impl]

// Set installs i; package netallow calls it from its init.
func Set(i *Impl) { impl.Store(i) }

// Get is the installed implementation, or nil when netallow is not
// linked into this program.
func Get() *Impl { return impl.Load() }
