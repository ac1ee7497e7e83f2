//go:build linux || darwin

package shim

import (
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

func run(mode string) int {
	switch mode {
	case "exec":
		return execStage()
	case "supervise":
		oneProc()
		return supervise()
	case "serve":
		oneProc()
		return serve("")
	case "probe":
		return 0
	}
	if ids, ok := strings.CutPrefix(mode, "serve:"); ok {
		oneProc()
		return serve(ids)
	}
	return exitcode.Internal
}

// oneProc runs a supervisor's Go code on one P. A supervisor does one
// thing at a time on one goroutine and spends the task blocked in a
// syscall (poll, wait4, read); with a second, idle P the runtime leaves
// the blocked P alone for up to 10 ms and its sysmon thread keeps waking
// every 20-40 µs the whole time (about fifty wake-ups per task), while
// with one P it takes the P back after one tick and sysmon sleeps until
// the syscall returns.
func oneProc() { runtime.GOMAXPROCS(1) }

// report writes one line to the runner on the status pipe (fd 4).
func report(f *os.File, m Msg) {
	_, _ = f.Write(append(m.appendJSON(make([]byte, 0, 128)), '\n'))
}

// appendJSON appends m as json.Marshal writes it (members in order, empty
// ones left out), by hand: a supervisor reports two or three times in its
// life, and encoding/json's first use in a process (building the type's
// encoder by reflection) cost more than everything else about a report.
func (m *Msg) appendJSON(b []byte) []byte {
	b = jsonx.AppendString(append(b, `{"event":`...), m.Event)
	if m.Code != 0 {
		b = strconv.AppendInt(append(b, `,"code":`...), int64(m.Code), 10)
	}
	if m.Msg != "" {
		b = jsonx.AppendString(append(b, `,"msg":`...), m.Msg)
	}
	if m.Status != 0 {
		b = strconv.AppendUint(append(b, `,"status":`...), uint64(m.Status), 10)
	}
	for _, f := range [...]struct {
		key string
		v   int64
	}{{`,"user_us":`, m.UserUS}, {`,"sys_us":`, m.SysUS}, {`,"maxrss":`, m.MaxRSS}} {
		if f.v != 0 {
			b = strconv.AppendInt(append(b, f.key...), f.v, 10)
		}
	}
	return append(b, '}')
}

func reportErr(f *os.File, err error) int {
	code := exitcode.Of(err)
	report(f, Msg{Event: "error", Code: code, Msg: err.Error()})
	return code
}
