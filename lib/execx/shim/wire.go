package shim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/art-runtime/art/lib/execx/stage"
)

// The spec's wire format, written and read by hand: every task's runner
// encodes one and its supervisor decodes it, and encoding/json's
// reflection (building a type's field table on first use, in each new
// process) cost more than the rest of the exchange.
//
// A spec is the protocol number (uvarint) and the Spec's fields; a field
// is its tag (one byte, the numbers below, strictly increasing within a
// message) and its value: nothing for a bool (present means true), a
// zig-zag varint for an int, a uvarint for a uint64, uvarint length and
// bytes for a string or a []byte, uvarint count and the elements for a
// list, uvarint length and the fields for a nested message (Stage, View,
// StageView, each Rlimit). Zero values are left out. The decoder refuses
// a tag it does not know or out of order (a runner of another build may
// be asking for something this shim would skip), a value running past its
// message, a count the remaining bytes cannot hold, and an int that does
// not fit, naming the field; it never allocates more than the message's
// size in elements.

// Field tags of Spec.
const (
	tagStage = iota + 1
	tagDirect
	tagView
	tagStageView
	tagPIDNS
	tagMapIDs
	tagUID
	tagGID
	tagSupervise
	tagStderr
	tagRWTrees
	tagLoopback
	tagProxyPort
	tagCgroup
)

// Field tags of stage.Spec.
const (
	tagPath = iota + 1
	tagArgv
	tagEnv
	tagRlimits
	tagNofileSoft
	tagNNP
	tagDropCaps
	tagKeepCaps
	tagLandlock
	tagRW
	tagRWFDs
	tagNodes
	tagFilters
	tagNetOpen
)

// Field tags of stage.View and stage.Rlimit.
const (
	tagViewProc = iota + 1
	tagViewReadOnly
	tagViewRW
	tagViewCwd
)

const (
	tagLimitName = iota + 1
	tagLimitResource
	tagLimitValue
)

// Field names by tag, for errors (index 0 unused).
var (
	specFields  = [...]string{"", "stage", "direct", "view", "stage_view", "pidns", "map_ids", "uid", "gid", "supervise", "stderr", "rw_trees", "loopback", "proxy_port", "cgroup"}
	stageFields = [...]string{"", "path", "argv", "env", "rlimits", "nofile_soft", "nnp", "drop_caps", "keep_caps", "landlock", "rw", "rw_fds", "nodes", "filters", "net_open"}
	viewFields  = [...]string{"", "proc", "readonly", "rw", "cwd"}
	limitFields = [...]string{"", "name", "resource", "value"}
)

// Encode is the spec as sent on fd 3 (and in a serve message), stamped
// with Protocol.
func (s *Spec) Encode() []byte {
	s.Proto = Protocol
	var e enc
	e.b = make([]byte, 0, 256+len(s.Stage.Path)+strsLen(s.Stage.Argv)+strsLen(s.Stage.Env))
	e.b = binary.AppendUvarint(e.b, uint64(Protocol))
	e.msg(tagStage, func() { e.stage(&s.Stage) })
	e.flag(tagDirect, s.Direct)
	if s.View != nil {
		e.msg(tagView, func() { e.view(s.View) })
	}
	if s.StageView != nil {
		e.msg(tagStageView, func() { e.view(s.StageView) })
	}
	e.flag(tagPIDNS, s.PIDNS)
	e.flag(tagMapIDs, s.MapIDs)
	e.int(tagUID, s.UID)
	e.int(tagGID, s.GID)
	e.flag(tagSupervise, s.Supervise)
	e.flag(tagStderr, s.Stderr)
	e.int(tagRWTrees, s.RWTrees)
	e.flag(tagLoopback, s.Loopback)
	e.int(tagProxyPort, s.ProxyPort)
	e.flag(tagCgroup, s.Cgroup)
	return e.b
}

func strsLen(ss []string) int {
	n := 0
	for _, s := range ss {
		n += len(s) + 2
	}
	return n
}

type enc struct{ b []byte }

func (e *enc) flag(tag byte, v bool) {
	if v {
		e.b = append(e.b, tag)
	}
}

func (e *enc) int(tag byte, v int) {
	if v != 0 {
		e.b = binary.AppendVarint(append(e.b, tag), int64(v))
	}
}

func (e *enc) uint(tag byte, v uint64) {
	if v != 0 {
		e.b = binary.AppendUvarint(append(e.b, tag), v)
	}
}

func (e *enc) str(tag byte, v string) {
	if v != "" {
		e.b = append(binary.AppendUvarint(append(e.b, tag), uint64(len(v))), v...)
	}
}

func (e *enc) strs(tag byte, v []string) {
	if len(v) == 0 {
		return
	}
	e.b = binary.AppendUvarint(append(e.b, tag), uint64(len(v)))
	for _, s := range v {
		e.b = append(binary.AppendUvarint(e.b, uint64(len(s))), s...)
	}
}

func (e *enc) ints(tag byte, v []int) {
	if len(v) == 0 {
		return
	}
	e.b = binary.AppendUvarint(append(e.b, tag), uint64(len(v)))
	for _, n := range v {
		e.b = binary.AppendVarint(e.b, int64(n))
	}
}

// msg writes a nested message: its tag, then sized.
func (e *enc) msg(tag byte, body func()) {
	e.b = append(e.b, tag)
	e.sized(body)
}

// sized writes the length of what body appends, then that (the length is
// patched in once known; messages are short, so one length byte is
// reserved and the body moved if it needs more).
func (e *enc) sized(body func()) {
	e.b = append(e.b, 0)
	start := len(e.b)
	body()
	n := len(e.b) - start
	if n < 0x80 {
		e.b[start-1] = byte(n)
		return
	}
	var l [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(l[:], uint64(n))
	e.b = append(e.b, l[1:k]...) // room for the longer length
	copy(e.b[start+k-1:], e.b[start:start+n])
	copy(e.b[start-1:], l[:k])
}

func (e *enc) stage(s *stage.Spec) {
	e.str(tagPath, s.Path)
	e.strs(tagArgv, s.Argv)
	e.strs(tagEnv, s.Env)
	if len(s.Rlimits) > 0 {
		e.b = binary.AppendUvarint(append(e.b, tagRlimits), uint64(len(s.Rlimits)))
		for i := range s.Rlimits {
			r := &s.Rlimits[i]
			e.sized(func() {
				e.str(tagLimitName, r.Name)
				e.int(tagLimitResource, r.Resource)
				e.uint(tagLimitValue, r.Value)
			})
		}
	}
	e.uint(tagNofileSoft, s.NofileSoft)
	e.flag(tagNNP, s.NNP)
	e.flag(tagDropCaps, s.DropCaps)
	e.ints(tagKeepCaps, s.KeepCaps)
	e.int(tagLandlock, s.Landlock)
	e.strs(tagRW, s.RW)
	e.ints(tagRWFDs, s.RWFDs)
	e.strs(tagNodes, s.Nodes)
	if len(s.Filters) > 0 {
		e.b = binary.AppendUvarint(append(e.b, tagFilters), uint64(len(s.Filters)))
		for _, f := range s.Filters {
			e.b = append(binary.AppendUvarint(e.b, uint64(len(f))), f...)
		}
	}
	e.flag(tagNetOpen, s.NetOpen)
}

func (e *enc) view(v *stage.View) {
	e.flag(tagViewProc, v.Proc)
	e.flag(tagViewReadOnly, v.ReadOnly)
	e.strs(tagViewRW, v.RW)
	e.str(tagViewCwd, v.Cwd)
}

// errTruncated: a value runs past the end of its message.
var errTruncated = errors.New("truncated")

// decodeSpec reads a spec as Encode writes it. It refuses another
// protocol, and a field it does not know: the runner may be a newer build
// asking for a restriction this shim would silently skip.
func decodeSpec(b []byte) (*Spec, error) {
	proto, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, fmt.Errorf("shim: decode spec (the tool and artexec-shim must come from the same build): no protocol number")
	}
	if proto != Protocol {
		return nil, fmt.Errorf("shim: spec protocol %d, this shim speaks %d: install the tool and artexec-shim from the same build", proto, Protocol)
	}
	s := &Spec{Proto: Protocol}
	d := dec{b: b[n:]}
	err := d.fields(specFields[:], func(tag byte, name string) (err error) {
		switch tag {
		case tagStage:
			err = d.sub(name, func(sd *dec) error { return sd.stage(&s.Stage) })
		case tagView, tagStageView:
			v := new(stage.View)
			err = d.sub(name, func(sd *dec) error { return sd.view(v) })
			if tag == tagView {
				s.View = v
			} else {
				s.StageView = v
			}
		case tagDirect:
			s.Direct = true
		case tagPIDNS:
			s.PIDNS = true
		case tagMapIDs:
			s.MapIDs = true
		case tagUID:
			s.UID, err = d.int(name)
		case tagGID:
			s.GID, err = d.int(name)
		case tagSupervise:
			s.Supervise = true
		case tagStderr:
			s.Stderr = true
		case tagRWTrees:
			s.RWTrees, err = d.int(name)
		case tagLoopback:
			s.Loopback = true
		case tagProxyPort:
			s.ProxyPort, err = d.int(name)
		case tagCgroup:
			s.Cgroup = true
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("shim: decode spec (the tool and artexec-shim must come from the same build): %w", err)
	}
	return s, nil
}

// dec reads one message; path names it in errors ("stage", "view").
type dec struct {
	b    []byte
	path string
}

// fields reads the message's fields to its end, calling field for each
// known tag with its name (path.name) to read the value.
func (d *dec) fields(names []string, field func(tag byte, name string) error) error {
	last := byte(0)
	for len(d.b) > 0 {
		tag := d.b[0]
		d.b = d.b[1:]
		if tag == 0 || int(tag) >= len(names) {
			what := d.path
			if what == "" {
				what = "spec"
			}
			return fmt.Errorf("unknown field %d in %s", tag, what)
		}
		name := d.prefix() + names[tag]
		if tag <= last {
			return fmt.Errorf("%s: out of order or repeated", name)
		}
		last = tag
		if err := field(tag, name); err != nil {
			return err
		}
	}
	return nil
}

func (d *dec) prefix() string {
	if d.path == "" {
		return ""
	}
	return d.path + "."
}

func (d *dec) uvarint(name string) (uint64, error) {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		return 0, fmt.Errorf("%s: %w number", name, errTruncated)
	}
	d.b = d.b[n:]
	return v, nil
}

func (d *dec) int(name string) (int, error) {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		return 0, fmt.Errorf("%s: %w number", name, errTruncated)
	}
	if v < math.MinInt || v > math.MaxInt {
		return 0, fmt.Errorf("%s: %d does not fit an int", name, v)
	}
	d.b = d.b[n:]
	return int(v), nil
}

// count is a list's length: each element takes a byte at least, so a
// count the rest of the message cannot hold is refused before anything is
// allocated for it.
func (d *dec) count(name string) (int, error) {
	v, err := d.uvarint(name)
	if err == nil && v > uint64(len(d.b)) {
		err = fmt.Errorf("%s: %d elements in %d bytes", name, v, len(d.b))
	}
	return int(v), err
}

func (d *dec) bytes(name string) ([]byte, error) {
	n, err := d.uvarint(name)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.b)) {
		return nil, fmt.Errorf("%s: %w: %d bytes, %d left", name, errTruncated, n, len(d.b))
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v, nil
}

func (d *dec) str(name string) (string, error) {
	b, err := d.bytes(name)
	return string(b), err
}

func (d *dec) strs(name string) ([]string, error) {
	n, err := d.count(name)
	if err != nil || n == 0 {
		return nil, err
	}
	out := make([]string, n)
	for i := range out {
		if out[i], err = d.str(name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (d *dec) ints(name string) ([]int, error) {
	n, err := d.count(name)
	if err != nil || n == 0 {
		return nil, err
	}
	out := make([]int, n)
	for i := range out {
		if out[i], err = d.int(name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sub reads a nested message (length and fields) with body.
func (d *dec) sub(name string, body func(*dec) error) error {
	b, err := d.bytes(name)
	if err != nil {
		return err
	}
	return body(&dec{b: b, path: name})
}

func (d *dec) stage(s *stage.Spec) error {
	return d.fields(stageFields[:], func(tag byte, name string) (err error) {
		switch tag {
		case tagPath:
			s.Path, err = d.str(name)
		case tagArgv:
			s.Argv, err = d.strs(name)
		case tagEnv:
			s.Env, err = d.strs(name)
		case tagRlimits:
			var n int
			if n, err = d.count(name); err != nil || n == 0 {
				return err
			}
			s.Rlimits = make([]stage.Rlimit, n)
			for i := range s.Rlimits {
				if err = d.sub(name, func(ld *dec) error { return ld.rlimit(&s.Rlimits[i]) }); err != nil {
					return err
				}
			}
		case tagNofileSoft:
			s.NofileSoft, err = d.uvarint(name)
		case tagNNP:
			s.NNP = true
		case tagDropCaps:
			s.DropCaps = true
		case tagKeepCaps:
			s.KeepCaps, err = d.ints(name)
		case tagLandlock:
			s.Landlock, err = d.int(name)
		case tagRW:
			s.RW, err = d.strs(name)
		case tagRWFDs:
			s.RWFDs, err = d.ints(name)
		case tagNodes:
			s.Nodes, err = d.strs(name)
		case tagFilters:
			var n int
			if n, err = d.count(name); err != nil || n == 0 {
				return err
			}
			s.Filters = make([][]byte, n)
			for i := range s.Filters {
				var f []byte
				if f, err = d.bytes(name); err != nil {
					return err
				}
				s.Filters[i] = append([]byte(nil), f...) // a serving supervisor reuses its buffer

			}
		case tagNetOpen:
			s.NetOpen = true
		}
		return err
	})
}

func (d *dec) rlimit(r *stage.Rlimit) error {
	return d.fields(limitFields[:], func(tag byte, name string) (err error) {
		switch tag {
		case tagLimitName:
			r.Name, err = d.str(name)
		case tagLimitResource:
			r.Resource, err = d.int(name)
		case tagLimitValue:
			r.Value, err = d.uvarint(name)
		}
		return err
	})
}

func (d *dec) view(v *stage.View) error {
	return d.fields(viewFields[:], func(tag byte, name string) (err error) {
		switch tag {
		case tagViewProc:
			v.Proc = true
		case tagViewReadOnly:
			v.ReadOnly = true
		case tagViewRW:
			v.RW, err = d.strs(name)
		case tagViewCwd:
			v.Cwd, err = d.str(name)
		}
		return err
	})
}
