package execx

import (
	"encoding/json"
	"io"
	"strconv"
	"time"
	"unicode/utf8"
)

// WriteJSON writes r and a newline to w exactly as a json.Encoder with
// SetEscapeHTML(false) does (the Result's documented encoding, byte for
// byte: TestResultJSON holds it), without encoding/json's reflection,
// whose first use in a process (building the Result's encoder) cost a
// one-shot `artexec run` more than writing the Result itself. The output
// is streamed in pieces: a Result can carry its output's whole cap.
// A Result with network destinations, or a time json cannot write, goes
// through encoding/json.
func (r *Result) WriteJSON(w io.Writer) error {
	if (r.Network != nil && (len(r.Network.Allowed) > 0 || len(r.Network.Refused) > 0)) ||
		!jsonTime(r.StartedAt) || !jsonTime(r.EndedAt) {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(r)
	}
	e := resultEnc{w: w, b: make([]byte, 0, 1024)}
	e.raw(`{"apiVersion":`)
	e.str(r.APIVersion)
	e.raw(`,"kind":`)
	e.str(r.Kind)
	if r.TaskID != "" {
		e.raw(`,"task_id":`)
		e.str(r.TaskID)
	}
	e.raw(`,"program":`)
	e.str(r.Program)
	if r.ResolvedPath != "" {
		e.raw(`,"resolved_path":`)
		e.str(r.ResolvedPath)
	}
	e.int(`,"argc":`, int64(r.Argc))
	e.raw(`,"status":`)
	e.str(string(r.Status))
	e.int(`,"exit_code":`, int64(r.ExitCode))
	if r.Signal != "" {
		e.raw(`,"signal":`)
		e.str(r.Signal)
	}
	e.bool(`,"timed_out":`, r.TimedOut)
	e.bool(`,"cancelled":`, r.Cancelled)
	e.time(`,"started_at":`, r.StartedAt)
	e.time(`,"ended_at":`, r.EndedAt)
	e.int(`,"duration_ms":`, r.DurationMS)
	e.raw(`,"output":`)
	e.str(r.Output)
	e.int(`,"output_bytes":`, r.OutputBytes)
	e.bool(`,"output_truncated":`, r.OutputTruncated)
	e.intOmit(`,"output_omitted":`, r.OutputOmitted)
	e.bool(`,"output_incomplete":`, r.OutputIncomplete)
	e.intOmit(`,"stderr_bytes":`, r.StderrBytes)
	e.intOmit(`,"stderr_dropped":`, r.StderrDropped)
	e.raw(`,"isolation":{"backend":`)
	e.str(string(r.Isolation.Backend))
	e.raw(`,"enforced":`)
	e.strs(r.Isolation.Enforced)
	if len(r.Isolation.Dropped) > 0 {
		e.raw(`,"dropped":`)
		e.strs(r.Isolation.Dropped)
	}
	e.raw(`}`)
	if n := r.Network; n != nil {
		e.raw(`,"network":{"mode":`)
		e.str(string(n.Mode))
		e.intOmit(`,"allowed_omitted":`, int64(n.AllowedOmitted))
		e.intOmit(`,"refused_omitted":`, int64(n.RefusedOmitted))
		e.raw(`}`)
	}
	e.int(`,"rusage":{"user_ms":`, r.Rusage.UserMS)
	e.int(`,"sys_ms":`, r.Rusage.SysMS)
	e.int(`,"max_rss_kb":`, r.Rusage.MaxRSSKB)
	e.raw(`}`)
	if r.Error != "" {
		e.raw(`,"error":`)
		e.str(r.Error)
	}
	e.intOmit(`,"timeout_ms":`, r.TimeoutMS)
	if r.Killed {
		e.raw(`,"killed":true`)
	}
	e.int(`,"tool_exit_code":`, int64(r.ToolExitCode))
	e.intOmit(`,"killed_at_end":`, int64(r.KilledAtEnd))
	e.intOmit(`,"leftover":`, int64(r.Leftover))
	e.raw("}\n")
	return e.flush()
}

// jsonTime: t is one time.Time's MarshalJSON writes (a four-digit year).
func jsonTime(t time.Time) bool { y := t.Year(); return y >= 0 && y <= 9999 }

// resultEnc appends to b and writes it out whenever it grows past
// resultChunk, keeping the first write error.
type resultEnc struct {
	w   io.Writer
	b   []byte
	err error
}

const resultChunk = 32 << 10

func (e *resultEnc) flush() error {
	if e.err == nil && len(e.b) > 0 {
		_, e.err = e.w.Write(e.b)
	}
	e.b = e.b[:0]
	return e.err
}

func (e *resultEnc) raw(s string) { e.b = append(e.b, s...) }

func (e *resultEnc) int(key string, v int64) {
	e.b = strconv.AppendInt(append(e.b, key...), v, 10)
}

func (e *resultEnc) intOmit(key string, v int64) {
	if v != 0 {
		e.int(key, v)
	}
}

func (e *resultEnc) bool(key string, v bool) {
	e.b = strconv.AppendBool(append(e.b, key...), v)
}

func (e *resultEnc) time(key string, t time.Time) {
	e.b = append(t.AppendFormat(append(append(e.b, key...), '"'), time.RFC3339Nano), '"')
}

func (e *resultEnc) strs(v []string) {
	if v == nil {
		e.raw("null")
		return
	}
	e.b = append(e.b, '[')
	for i, s := range v {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.str(s)
	}
	e.b = append(e.b, ']')
}

// str writes s as encoding/json does without HTML escaping: quote,
// backslash and control characters escaped (\b \f \n \r \t short, the
// rest \u00XX), U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD.
func (e *resultEnc) str(s string) {
	const hex = "0123456789abcdef"
	e.b = append(e.b, '"')
	start := 0
	for i := 0; i < len(s); {
		if len(e.b)+i-start > resultChunk {
			e.b = append(e.b, s[start:i]...)
			start = i
			e.flush()
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			e.b = append(e.b, s[start:i]...)
			switch c {
			case '"', '\\':
				e.b = append(e.b, '\\', c)
			case '\b':
				e.b = append(e.b, '\\', 'b')
			case '\f':
				e.b = append(e.b, '\\', 'f')
			case '\n':
				e.b = append(e.b, '\\', 'n')
			case '\r':
				e.b = append(e.b, '\\', 'r')
			case '\t':
				e.b = append(e.b, '\\', 't')
			default:
				e.b = append(e.b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			e.b = append(append(e.b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			e.b = append(append(e.b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	e.b = append(append(e.b, s[start:]...), '"')
}
