//go:build darwin

package shim

import (
	"errors"

	"github.com/art-runtime/art/lib/exitcode"
)

// supervise: macOS has no child subreaper and no parent-death signal, so
// execx starts no supervisor there.
func supervise() int { return exitcode.Internal }

// serve: see supervise.
func serve() int { return exitcode.Internal }

// stageView: macOS has no mount namespaces; the runner never asks for one.
func stageView(s *Spec) error {
	if s.View != nil {
		return errors.New("no mount namespaces on this system")
	}
	return nil
}
