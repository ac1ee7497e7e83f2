package execx

import (
	"encoding/json"
	"io"
	"strconv"
	"time"

	"github.com/art-runtime/art/lib/jsonx"
)

// WriteJSON writes r and a newline to w exactly as a json.Encoder with
// SetEscapeHTML(false) does (the Result's documented encoding, byte for
// byte: TestResultJSON holds it), without encoding/json's reflection,
// whose first use in a process (building the Result's encoder) cost a
// one-shot `artexec run` more than writing the Result itself. The buffer
// is written out whenever a member takes it past resultChunk.
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
	iso := r.Isolation
	members := []member{
		{`{"apiVersion":`, r.APIVersion, false}, {`,"kind":`, r.Kind, false},
		{`,"task_id":`, r.TaskID, true}, {`,"program":`, r.Program, false},
		{`,"resolved_path":`, r.ResolvedPath, true}, {`,"argc":`, int64(r.Argc), false},
		{`,"status":`, string(r.Status), false}, {`,"exit_code":`, int64(r.ExitCode), false},
		{`,"signal":`, r.Signal, true}, {`,"timed_out":`, r.TimedOut, false},
		{`,"cancelled":`, r.Cancelled, false}, {`,"started_at":`, r.StartedAt, false},
		{`,"ended_at":`, r.EndedAt, false}, {`,"duration_ms":`, r.DurationMS, false},
		{`,"output":`, r.Output, false}, {`,"output_bytes":`, r.OutputBytes, false},
		{`,"output_truncated":`, r.OutputTruncated, false}, {`,"output_omitted":`, r.OutputOmitted, true},
		{`,"output_incomplete":`, r.OutputIncomplete, false}, {`,"stderr_bytes":`, r.StderrBytes, true},
		{`,"stderr_dropped":`, r.StderrDropped, true},
		{`,"isolation":{"backend":`, string(iso.Backend), false}, {`,"enforced":`, iso.Enforced, false},
		{`,"dropped":`, iso.Dropped, true}, {`}`, nil, false},
	}
	if n := r.Network; n != nil {
		members = append(members, member{`,"network":{"mode":`, string(n.Mode), false},
			member{`,"allowed_omitted":`, int64(n.AllowedOmitted), true},
			member{`,"refused_omitted":`, int64(n.RefusedOmitted), true}, member{`}`, nil, false})
	}
	members = append(members,
		member{`,"rusage":{"user_ms":`, r.Rusage.UserMS, false}, member{`,"sys_ms":`, r.Rusage.SysMS, false},
		member{`,"max_rss_kb":`, r.Rusage.MaxRSSKB, false}, member{`}`, nil, false},
		member{`,"error":`, r.Error, true}, member{`,"timeout_ms":`, r.TimeoutMS, true},
		member{`,"killed":`, r.Killed, true}, member{`,"tool_exit_code":`, int64(r.ToolExitCode), false},
		member{`,"killed_at_end":`, int64(r.KilledAtEnd), true}, member{`,"leftover":`, int64(r.Leftover), true},
		member{"}\n", nil, false})
	for _, m := range members {
		e.member(m)
	}
	return e.flush()
}

// member is one member of the Result's JSON: key is everything written
// before the value (comma, key, an object's opening), v the value
// (string, int64, bool, time.Time or []string; nil: key alone), omit
// leaves it out when v is its zero value (omitempty).
type member struct {
	key  string
	v    any
	omit bool
}

func (e *resultEnc) member(m member) {
	switch v := m.v.(type) {
	case nil:
		e.raw(m.key)
	case string:
		if v != "" || !m.omit {
			e.raw(m.key)
			e.str(v)
		}
	case int64:
		if v != 0 || !m.omit {
			e.b = strconv.AppendInt(append(e.b, m.key...), v, 10)
		}
	case bool:
		if v || !m.omit {
			e.b = strconv.AppendBool(append(e.b, m.key...), v)
		}
	case time.Time:
		e.b = append(v.AppendFormat(append(append(e.b, m.key...), '"'), time.RFC3339Nano), '"')
	case []string:
		if len(v) > 0 || !m.omit {
			e.raw(m.key)
			e.strs(v)
		}
	}
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

// str writes s as a JSON string (jsonx.AppendString: encoding/json's
// bytes) and sends the buffer on once it is past resultChunk.
func (e *resultEnc) str(s string) {
	e.b = jsonx.AppendString(e.b, s)
	if len(e.b) > resultChunk {
		e.flush()
	}
}
