package queue

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/jsonx"
)

// MaxManifestBytes bounds one Task manifest. A manifest is a request, not a
// payload: large inputs belong in context files in the workspace.
const MaxManifestBytes = 1 << 20

// MaxIDLen bounds task, worker and queue names.
const MaxIDLen = 128

// ValidName checks a task id, worker id or queue name: 1–128 of
// [A-Za-z0-9_-], starting with a letter or digit. The same names are file
// names under the queue directory and NATS subject tokens
// (art.<queue>.task.<id>), so dots, slashes and wildcards are out.
func ValidName(what, s string) error {
	if s == "" {
		return jsonx.Errorf(what, "must not be empty")
	}
	if len(s) > MaxIDLen {
		return jsonx.Errorf(what, "longer than %d bytes", MaxIDLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			return jsonx.Errorf(what, "%q: use letters, digits, '-' and '_' (starting with a letter or digit)", s)
		}
	}
	return nil
}

// DecodeManifest strictly decodes a Task manifest (unknown fields, bad
// durations, a missing program: exit 2 naming the field) with the runner's
// own defaults and validation, so a task the worker would refuse as malformed
// is refused at enqueue instead.
func DecodeManifest(data []byte) (*execx.Task, error) {
	if len(data) > MaxManifestBytes {
		return nil, jsonx.Errorf("task", "manifest is %d bytes, more than %d", len(data), MaxManifestBytes)
	}
	t, err := execx.DecodeTask(data)
	if err != nil {
		return nil, err
	}
	if t.ID != "" {
		if err := ValidName("task.id", t.ID); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// ArgvTask is the manifest of `artq enqueue -- PROGRAM ARGS…`.
func ArgvTask(argv []string) (*execx.Task, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, jsonx.Errorf("task.program", "required")
	}
	doc := &execx.Task{TypeMeta: jsonx.Meta(execx.KindTask), Program: argv[0], Args: argv[1:]}
	data, err := jsonx.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return DecodeManifest(data)
}

// canonical is the stored form of a manifest: compact, fields in declaration
// order, defaults applied. Two requests mean the same task exactly when their
// canonical forms are equal.
func canonical(t *execx.Task) ([]byte, error) {
	data, err := jsonx.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	if len(data) > MaxManifestBytes {
		return nil, jsonx.Errorf("task", "manifest is %d bytes, more than %d", len(data), MaxManifestBytes)
	}
	return data, nil
}

// NewID returns a fresh task id: 10 characters of millisecond time and 16 of
// randomness in Crockford's base32, lower case (26 in all, like a ULID), so
// ids sort by creation time and never collide in practice, which lets an
// enqueue of a generated id skip the existence check.
func NewID() string {
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
	var b [26]byte
	ms := uint64(time.Now().UnixMilli())
	for i := 9; i >= 0; i-- {
		b[i] = alphabet[ms&31]
		ms >>= 5
	}
	var r [10]byte
	if _, err := rand.Read(r[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	hi := binary.BigEndian.Uint64(r[:8])
	lo := uint64(binary.BigEndian.Uint16(r[8:]))
	// 80 random bits: 64 from hi, 16 from lo.
	for i := 25; i >= 10; i-- {
		b[i] = alphabet[lo&31]
		lo = lo>>5 | (hi&31)<<11
		hi >>= 5
	}
	return string(b[:])
}
