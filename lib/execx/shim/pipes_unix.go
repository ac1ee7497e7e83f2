//go:build linux || darwin

package shim

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/exitcode"
)

// StartError gives a failed exec its exit code: 127 for a program that
// vanished since it was resolved, 126 for one that cannot be executed.
func StartError(path string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT):
		return exitcode.Errorf(exitcode.ProgramNotFound, "start %s: %w", path, err)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.ENOEXEC), errors.Is(err, unix.EPERM), errors.Is(err, unix.EISDIR):
		return exitcode.Errorf(exitcode.Refused, "start %s: %w", path, err)
	}
	return exitcode.Errorf(exitcode.Internal, "start %s: %w", path, err)
}

// Pipes are the descriptors between the runner and a shim: the spec
// goes down fd 3, the shim's reports come back on fd 4, and (supervisor
// only) commands go down fd 5.
type Pipes struct {
	SpecR, SpecW     *os.File
	StatusR, StatusW *os.File
	CtlR, CtlW       *os.File
}

func NewPipes(control bool) (*Pipes, error) {
	sh := &Pipes{}
	var err error
	if sh.SpecR, sh.SpecW, err = os.Pipe(); err == nil {
		err = sh.statusCtl(control)
	}
	if err != nil {
		sh.CloseAll()
		return nil, exitcode.Errorf(exitcode.Internal, "shim pipes: %w", err)
	}
	return sh, nil
}

func (sh *Pipes) CloseChildEnds() {
	for _, f := range []*os.File{sh.SpecR, sh.StatusW, sh.CtlR} {
		if f != nil {
			f.Close()
		}
	}
}

// CloseAll closes what is left on our side once the start is decided;
// the supervisor keeps StatusR and CtlW for the run by nil-ing them first.
func (sh *Pipes) CloseAll() {
	for _, f := range []*os.File{sh.SpecR, sh.SpecW, sh.StatusR, sh.StatusW, sh.CtlR, sh.CtlW} {
		if f != nil {
			f.Close()
		}
	}
}

func (sh *Pipes) statusCtl(control bool) error {
	var err error
	if sh.StatusR, sh.StatusW, err = os.Pipe(); err == nil && control {
		sh.CtlR, sh.CtlW, err = os.Pipe()
	}
	return err
}

// Handshake sends the spec and waits for the exec shim's verdict: EOF on
// the close-on-exec status pipe means the program was executed; a report
// means it was not, and why.
func (sh *Pipes) Handshake(spec *Spec) error {
	_, werr := sh.SpecW.Write(spec.Encode())
	sh.SpecW.Close()
	sh.SpecW = nil
	msg, rerr := io.ReadAll(sh.StatusR)
	if len(bytes.TrimSpace(msg)) > 0 {
		var m Msg
		if err := json.Unmarshal(bytes.TrimSpace(msg), &m); err != nil || m.Event != "error" {
			return exitcode.Errorf(exitcode.Internal, "shim: unexpected report %q", msg)
		}
		return &Error{Code: m.Code, Msg: m.Msg}
	}
	if werr != nil || rerr != nil {
		return exitcode.Errorf(exitcode.Internal, "shim: %w", errors.Join(werr, rerr))
	}
	return nil
}

// Msg is one line the shim reports on its status pipe.
type Msg struct {
	Event  string `json:"event"` // started, error, exited
	Code   int    `json:"code,omitempty"`
	Msg    string `json:"msg,omitempty"`
	Status uint32 `json:"status,omitempty"`
	UserUS int64  `json:"user_us,omitempty"`
	SysUS  int64  `json:"sys_us,omitempty"`
	MaxRSS int64  `json:"maxrss,omitempty"`
}

// Error is how a shim reports that the program could not be started.
type Error struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

func (e *Error) Error() string { return e.Msg }

// The messages of a supervisor (or a task's own process) that could not
// make the task's user namespace or mount view, before any process of
// the task existed.
const (
	msgUserNS = "isolation: user namespace: "
	msgView   = "isolation: mount view: "
)

// NamespacesRefused reports whether e is such a failure: the kernel or a
// security module refused the namespaces, not the task.
func (e *Error) NamespacesRefused() bool {
	return strings.HasPrefix(e.Msg, msgUserNS) || strings.HasPrefix(e.Msg, msgView)
}
func (e *Error) ExitCode() int { return e.Code }
