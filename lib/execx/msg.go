package execx

import (
	"errors"
	"sync"

	"github.com/art-runtime/art/lib/execx/shim"
	"github.com/art-runtime/art/lib/jsonx"
)

// errMsg: a status line that is not a shim.Msg object.
var errMsg = errors.New("not a status message")

// decodeMsg reads one status line of a shim (a JSON object, as
// shim.Msg marshals) with the zero-allocation scanner: every task has
// three of them. A line that is not such an object, or has a member Msg
// does not know, is an error (the caller drops it).
func decodeMsg(line []byte, m *shim.Msg) error {
	sc := jsonx.NewScanner(line)
	sc.Strings = jsonx.ReplaceInvalid
	err := sc.Object(func(key []byte) error {
		var ok bool
		switch string(key) {
		case "event":
			s, err := sc.String()
			if err != nil {
				return err
			}
			m.Event = msgEvent(s)
			return nil
		case "msg":
			s, err := sc.String()
			if err != nil {
				return err
			}
			m.Msg = string(s)
			return nil
		case "code":
			m.Code, ok = sc.Int()
		case "status":
			var u uint64
			u, ok = sc.Uint()
			ok = ok && u <= 1<<32-1
			m.Status = uint32(u)
		case "user_us":
			m.UserUS, ok = sc.Int64()
		case "sys_us":
			m.SysUS, ok = sc.Int64()
		case "maxrss":
			m.MaxRSS, ok = sc.Int64()
		default: // the shim is of the same build (its spec's protocol says so)
			return errMsg
		}
		if !ok {
			return errMsg
		}
		return nil
	})
	if err != nil {
		return err
	}
	return sc.End()
}

// msgEvent is the event name, without allocating for the ones the shim
// sends.
func msgEvent(s []byte) string {
	for _, e := range [...]string{"started", "exited", "idle", "reaped", "killed", "error"} {
		if string(s) == e {
			return e
		}
	}
	return string(s)
}

// drainBufs are drain's copy buffers: each run needs one per pipe for a
// few milliseconds, and 64 KiB allocated (and zeroed) per run was most of
// what a run allocated.
var drainBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// statusBufs are the status readers' line buffers, for the same reason.
var statusBufs = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}
