//go:build linux || darwin

package shim

import (
	"os"
	"runtime"
	"strconv"
	"unicode/utf8"

	"github.com/art-runtime/art/lib/exitcode"
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
		return serve()
	case "probe":
		return 0
	}
	return exitcode.Internal
}

// oneProc runs a supervisor's Go code on one P. A supervisor does one
// thing at a time on its locked thread and spends the task blocked in a
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
	b = appendJSONString(append(b, `{"event":`...), m.Event)
	if m.Code != 0 {
		b = strconv.AppendInt(append(b, `,"code":`...), int64(m.Code), 10)
	}
	if m.Msg != "" {
		b = appendJSONString(append(b, `,"msg":`...), m.Msg)
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

// appendJSONString appends s as a JSON string: quote, backslash and
// control bytes escaped, invalid UTF-8 replaced by U+FFFD (as
// encoding/json does; the runner reads either).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		case c < utf8.RuneSelf:
			b = append(b, c)
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		i++
	}
	return append(b, '"')
}

func reportErr(f *os.File, err error) int {
	code := exitcode.Of(err)
	report(f, Msg{Event: "error", Code: code, Msg: err.Error()})
	return code
}
