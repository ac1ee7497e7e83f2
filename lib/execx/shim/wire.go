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

// A message is a table of fields; a field's tag is its index there plus
// one, so a field is added at the end of its table (and the protocol
// bumped), never in between.
type field struct {
	name string // in errors, as the field's json name
	// v points at the value: *bool, *int, *uint64, *string, *[]string,
	// *[]int, *[][]byte, or a nested message (stageMsg, viewMsg,
	// limitsMsg).
	v any
}

type (
	stageMsg  struct{ p *stage.Spec }
	viewMsg   struct{ p **stage.View } // left out when nil
	limitsMsg struct{ p *[]stage.Rlimit }
)

func specFields(s *Spec) []field {
	return []field{
		{"stage", stageMsg{&s.Stage}}, {"direct", &s.Direct}, {"view", viewMsg{&s.View}},
		{"stage_view", viewMsg{&s.StageView}}, {"pidns", &s.PIDNS}, {"map_ids", &s.MapIDs},
		{"uid", &s.UID}, {"gid", &s.GID}, {"supervise", &s.Supervise}, {"stderr", &s.Stderr},
		{"rw_trees", &s.RWTrees}, {"loopback", &s.Loopback}, {"proxy_port", &s.ProxyPort},
		{"cgroup", &s.Cgroup},
	}
}

func stageFields(s *stage.Spec) []field {
	return []field{
		{"path", &s.Path}, {"argv", &s.Argv}, {"env", &s.Env}, {"rlimits", limitsMsg{&s.Rlimits}},
		{"nofile_soft", &s.NofileSoft}, {"nnp", &s.NNP}, {"drop_caps", &s.DropCaps},
		{"keep_caps", &s.KeepCaps}, {"landlock", &s.Landlock}, {"rw", &s.RW}, {"rw_fds", &s.RWFDs},
		{"nodes", &s.Nodes}, {"filters", &s.Filters}, {"private_tmp", &s.PrivateTmp}, {"net_open", &s.NetOpen},
	}
}

func viewFields(v *stage.View) []field {
	return []field{{"proc", &v.Proc}, {"readonly", &v.ReadOnly}, {"rw", &v.RW}, {"tmp", &v.Tmp}, {"tmp_size", &v.TmpSize}, {"cwd", &v.Cwd}}
}

func limitFields(r *stage.Rlimit) []field {
	return []field{{"name", &r.Name}, {"resource", &r.Resource}, {"value", &r.Value}}
}

// Encode is the spec as sent on fd 3 (and in a serve message), stamped
// with Protocol.
func (s *Spec) Encode() []byte {
	s.Proto = Protocol
	var e enc
	e.b = make([]byte, 0, 256+len(s.Stage.Path)+strsLen(s.Stage.Argv)+strsLen(s.Stage.Env))
	e.b = binary.AppendUvarint(e.b, uint64(Protocol))
	e.fields(specFields(s))
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

// fields writes each field that is not its zero value.
func (e *enc) fields(fs []field) {
	for i, f := range fs {
		tag := byte(i + 1)
		switch v := f.v.(type) {
		case *bool: // present means true
			if *v {
				e.b = append(e.b, tag)
			}
		case *int:
			e.int(tag, *v)
		case *uint64:
			e.uint(tag, *v)
		case *string:
			e.str(tag, *v)
		case *[]string:
			e.strs(tag, *v)
		case *[]int:
			e.ints(tag, *v)
		case *[][]byte:
			if len(*v) > 0 {
				e.b = binary.AppendUvarint(append(e.b, tag), uint64(len(*v)))
				for _, b := range *v {
					e.b = append(binary.AppendUvarint(e.b, uint64(len(b))), b...)
				}
			}
		case stageMsg:
			e.msg(tag, func() { e.fields(stageFields(v.p)) })
		case viewMsg:
			if *v.p != nil {
				e.msg(tag, func() { e.fields(viewFields(*v.p)) })
			}
		case limitsMsg:
			if len(*v.p) > 0 {
				e.b = binary.AppendUvarint(append(e.b, tag), uint64(len(*v.p)))
				for i := range *v.p {
					e.sized(func() { e.fields(limitFields(&(*v.p)[i])) })
				}
			}
		}
	}
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
	if err := d.fields(specFields(s)); err != nil {
		return nil, fmt.Errorf("shim: decode spec (the tool and artexec-shim must come from the same build): %w", err)
	}
	return s, nil
}

// dec reads one message; path names it in errors ("stage", "view").
type dec struct {
	b    []byte
	path string
}

// fields reads the message's fields to its end into fs.
func (d *dec) fields(fs []field) error {
	last := 0
	for len(d.b) > 0 {
		tag := int(d.b[0])
		d.b = d.b[1:]
		if tag == 0 || tag > len(fs) {
			what := d.path
			if what == "" {
				what = "spec"
			}
			return fmt.Errorf("unknown field %d in %s", tag, what)
		}
		f := fs[tag-1]
		name := d.prefix() + f.name
		if tag <= last {
			return fmt.Errorf("%s: out of order or repeated", name)
		}
		last = tag
		if err := d.value(name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// value reads one field's value into v (a field's v).
func (d *dec) value(name string, v any) (err error) {
	switch v := v.(type) {
	case *bool:
		*v = true
	case *int:
		*v, err = d.int(name)
	case *uint64:
		*v, err = d.uvarint(name)
	case *string:
		*v, err = d.str(name)
	case *[]string:
		*v, err = list(d, name, d.str)
	case *[]int:
		*v, err = list(d, name, d.int)
	case *[][]byte:
		*v, err = list(d, name, func(name string) ([]byte, error) {
			b, err := d.bytes(name)
			return append([]byte(nil), b...), err // a serving supervisor reuses its buffer
		})
	case stageMsg:
		err = d.sub(name, func(sd *dec) error { return sd.fields(stageFields(v.p)) })
	case viewMsg:
		*v.p = new(stage.View)
		err = d.sub(name, func(sd *dec) error { return sd.fields(viewFields(*v.p)) })
	case limitsMsg:
		*v.p, err = list(d, name, func(name string) (r stage.Rlimit, err error) {
			err = d.sub(name, func(ld *dec) error { return ld.fields(limitFields(&r)) })
			return r, err
		})
	}
	return err
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

// list reads a count and that many elements with elem; none is nil.
func list[T any](d *dec, name string, elem func(string) (T, error)) ([]T, error) {
	n, err := d.count(name)
	if err != nil || n == 0 {
		return nil, err
	}
	out := make([]T, n)
	for i := range out {
		if out[i], err = elem(name); err != nil {
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
