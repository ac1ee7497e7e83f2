// Package redact turns untrusted attribute values into bounded canonical
// JSON with secrets removed. It is the one place where raw event data is
// read; what leaves it is safe to write anywhere.
//
// It copies only scalars, maps and slices, by their reflect kind, and never
// calls a value's methods: no Error(), no String(), no MarshalJSON, no fmt.
// Anything else (structs, pointers, funcs, channels) becomes a marker.
// Secrets are found by name (unsafe keys, name=value in text, --flag value in
// argv, URL query parameters), by form (token families, JWTs, PEM private
// keys, Authorization headers, URL credentials, gitleaks' rules), inside
// encoded text (base64, hex, percent-encoding, escapes; see decode.go), or
// because the caller said so (sensitive paths); binary strings, cycles,
// excess depth, size and collection overflow are cut. A token is removed
// whole (see tokenSpan), and a value that is JSON text stays valid JSON
// (see keepJSON). Each removal leaves an in-place marker,
// "[REDACTED:<rule>]" or, with a key, "[REDACTED:<rule>:hmac-sha256:<16 hex>]"
// so the same secret correlates across events without being recoverable, and
// counts one in the Summary, which never holds values.
//
// Redaction is idempotent: redacting its own output changes nothing and
// counts nothing. It refuses nothing either: whatever the input, the output
// is valid canonical JSON (RFC 8785) within Limits.Total bytes.
package redact

//go:generate go run ./internal/gen

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/art-runtime/art/lib/jsonx"
)

// Limits bound the output. Zero fields take the DefaultLimits value.
type Limits struct {
	Depth   int // nesting of maps and arrays inside attrs (attrs itself is 1)
	String  int // bytes per string value after redaction; longer ones are cut
	ScanMax int // strings longer than this are replaced whole, unscanned
	Key     int // bytes per map key; longer keys are dropped with their value
	Members int // members per map; the rest (in key order) are dropped
	Items   int // items per array, the last slot becoming a marker on overflow
	Total   int // bytes of the whole canonical attrs object
}

// DefaultLimits keep an event well under a pipe buffer and a page of
// terminal while leaving room for a command's head-and-tail output.
var DefaultLimits = Limits{
	Depth:   32,
	String:  16 << 10,
	ScanMax: 1 << 20,
	Key:     256,
	Members: 512,
	Items:   512,
	Total:   64 << 10,
}

// Options configure a Redactor.
type Options struct {
	// HMACKey, when set, turns markers into keyed hashes of the removed
	// value: equal secrets give equal markers; the key is needed to test a
	// guess.
	HMACKey []byte
	Limits  Limits
}

// Redactor applies the rules. It is safe for concurrent use.
type Redactor struct {
	key  []byte
	lim  Limits
	pool sync.Pool
}

// New returns a Redactor. Limits below a workable floor are raised to it.
func New(o Options) *Redactor {
	l := o.Limits
	d := DefaultLimits
	fill := func(v *int, def, floor int) {
		if *v <= 0 {
			*v = def
		}
		*v = max(*v, floor)
	}
	fill(&l.Depth, d.Depth, 2)
	fill(&l.String, d.String, 128)
	fill(&l.ScanMax, d.ScanMax, l.String)
	fill(&l.Key, d.Key, 16)
	fill(&l.Members, d.Members, 2)
	fill(&l.Items, d.Items, 2)
	fill(&l.Total, d.Total, 1024)
	r := &Redactor{lim: l}
	if len(o.HMACKey) > 0 {
		r.key = slices.Clone(o.HMACKey)
	}
	r.pool.New = func() any { return &walker{r: r} }
	return r
}

// Limits returns the limits in force.
func (r *Redactor) Limits() Limits { return r.lim }

// AppendAttrs appends the redacted canonical JSON object for attrs to dst
// and counts what it removed into sum. Values at the sensitive paths are
// masked whole. A nil attrs is {}.
func (r *Redactor) AppendAttrs(dst []byte, attrs map[string]any, sensitive []Path, sum *Summary) []byte {
	w := r.pool.Get().(*walker)
	w.dst, w.base, w.open, w.sum = dst, len(dst), 0, sum
	var sens []sensState
	for i := range sensitive {
		sens = append(sens, sensState{p: &sensitive[i]})
	}
	if attrs == nil {
		w.dst = append(w.dst, "{}"...)
	} else {
		w.mapAny(attrs, 1, sens)
	}
	out := w.dst
	w.dst, w.sum = nil, nil
	w.anc = w.anc[:0]
	r.pool.Put(w)
	return out
}

// Text redacts a free-text string with the text rules only: the header
// fields of an event (subject, type, correlation, causation) are bounded by
// their own validation and must stay strings.
func (r *Redactor) Text(s string, sum *Summary) string {
	if !utf8.ValidString(s) {
		sum.Add(Binary, 1)
		return r.marker(Binary, "")
	}
	if s == "" {
		return s
	}
	w := r.pool.Get().(*walker)
	out := w.scan(s, sum)
	r.pool.Put(w)
	return out
}

// scan masks every secret found in s; it returns s itself when there is
// none. The walker's span buffer is reused, so a string without secrets
// costs no allocation.
func (w *walker) scan(s string, sum *Summary) string {
	return w.scanNamed("", s, sum)
}

// scanNamed is scan for a value that has a name (its map key, or the argv
// item before it): gitleaks' rules see it after that name, the way they see
// it in a serialized draft, since many of them need the name to match
// ("heroku_api_key": "<uuid>").
func (w *walker) scanNamed(name, s string, sum *Summary) string {
	sp := findSecrets(s, w.spans[:0])
	sp = providerSpans(s, sp)
	sp = randomSpans(s, sp)
	sp = table().leaks.scan(&w.lk, name, s, sp)
	sp = dropBenign(s, sp)
	sp = w.decodedSpans(s, sp)
	sp = keepJSON(s, sp)
	w.spans = sp[:0]
	if len(sp) == 0 {
		return s
	}
	return w.r.apply(s, sp, sum)
}

func (r *Redactor) apply(s string, sp []span, sum *Summary) string {
	sp = mergeSpans(sp)
	var b strings.Builder
	b.Grow(len(s) + 16*len(sp))
	last := 0
	for _, x := range sp {
		b.WriteString(s[last:x.a])
		if x.quote {
			b.WriteByte('"')
		}
		b.WriteString(r.marker(x.rule, s[x.a:x.b]))
		if x.quote {
			b.WriteByte('"')
		}
		sum.Add(x.rule, 1)
		last = x.b
	}
	b.WriteString(s[last:])
	return b.String()
}

// marker is the replacement text for a removed value; raw is the value, used
// only for the keyed hash (empty: no hash).
func (r *Redactor) marker(rule Rule, raw string) string {
	if r.key == nil || raw == "" {
		return table().markers[rule]
	}
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(raw))
	var sum [sha256.Size]byte
	var hx [16]byte
	hex.Encode(hx[:], m.Sum(sum[:0])[:8])
	return "[REDACTED:" + rule.ID() + ":hmac-sha256:" + string(hx[:]) + "]"
}

// Path is a parsed sensitive path: "attrs" followed by .key, .* (any key),
// [N] or [*] (any index) segments. Keys containing '.' or '[' cannot be
// addressed; name a parent instead.
type Path struct {
	segs []pathSeg
}

type pathSeg struct {
	key   string
	index int // -1 for a key segment
	any   bool
}

// ErrPath is wrapped by every ParsePath error.
var ErrPath = errors.New("invalid sensitive path")

// ParsePath parses a sensitive path such as "attrs.request.headers[*].value".
func ParsePath(s string) (Path, error) {
	rest, ok := strings.CutPrefix(s, "attrs")
	if !ok {
		return Path{}, errorsf("%q must start with \"attrs.\"", s)
	}
	if rest == "" {
		return Path{}, errorsf("%q must name a value inside attrs", s)
	}
	var p Path
	for rest != "" {
		if len(p.segs) >= 32 {
			return Path{}, errorsf("%q has more than 32 segments", s)
		}
		switch rest[0] {
		case '.':
			rest = rest[1:]
			n := strings.IndexAny(rest, ".[")
			if n < 0 {
				n = len(rest)
			}
			if n == 0 {
				return Path{}, errorsf("%q has an empty key", s)
			}
			key := rest[:n]
			p.segs = append(p.segs, pathSeg{key: key, index: -1, any: key == "*"})
			rest = rest[n:]
		case '[':
			n := strings.IndexByte(rest, ']')
			if n < 0 {
				return Path{}, errorsf("%q has an unclosed '['", s)
			}
			in := rest[1:n]
			rest = rest[n+1:]
			if in == "*" {
				p.segs = append(p.segs, pathSeg{index: 0, any: true})
				continue
			}
			i, err := strconv.Atoi(in)
			if err != nil || i < 0 || in != strconv.Itoa(i) {
				return Path{}, errorsf("%q has a bad index [%s] (want a number or *)", s, in)
			}
			p.segs = append(p.segs, pathSeg{index: i})
		default:
			return Path{}, errorsf("%q: expected '.' or '[' at %q", s, rest)
		}
	}
	return p, nil
}

func errorsf(format string, args ...any) error {
	return &pathError{msg: fmt.Sprintf(format, args...)}
}

type pathError struct{ msg string }

func (e *pathError) Error() string { return e.msg }
func (e *pathError) Unwrap() error { return ErrPath }

type sensState struct {
	p   *Path
	pos int
}

// child advances the sensitive states over one step (a key or an index).
// It reports whether the value there is sensitive, and the states for its
// children.
func child(sens []sensState, key string, index int) (bool, []sensState) {
	if len(sens) == 0 {
		return false, nil
	}
	var next []sensState
	for _, s := range sens {
		seg := s.p.segs[s.pos]
		var ok bool
		if index < 0 {
			ok = seg.index < 0 && (seg.any || seg.key == key)
		} else {
			ok = seg.index >= 0 && (seg.any || seg.index == index)
		}
		if !ok {
			continue
		}
		if s.pos+1 == len(s.p.segs) {
			return true, nil
		}
		next = append(next, sensState{p: s.p, pos: s.pos + 1})
	}
	return false, next
}

type member struct {
	key  string // after redaction: the output key
	orig string
	val  any
	str  string
	rv   reflect.Value
	kind uint8 // 0 any, 1 string, 2 reflect
}

type walker struct {
	r        *Redactor
	dst      []byte
	base     int
	open     int
	sum      *Summary
	anc      []unsafe.Pointer
	bufs     [][]member
	orders   [][]int32
	spans    []span
	keyCache map[string]bool
	lk       leakScratch
	decBuf   []byte // decoding scratch (see decodedSpans)
	name     string // the name of the scalar about to be written (see str)
	last     string // the last string written, redacted (the next argv item's name)
}

func (w *walker) fits(n int) bool {
	return len(w.dst)-w.base+n+w.open <= w.r.lim.Total
}

// mask writes a marker string for rule; false if it does not fit.
func (w *walker) mask(rule Rule, raw string) bool {
	m := w.r.marker(rule, raw)
	w.last = m
	if !w.fits(len(m) + 2) {
		return false
	}
	w.dst = append(w.dst, '"')
	w.dst = append(w.dst, m...)
	w.dst = append(w.dst, '"')
	w.sum.Add(rule, 1)
	return true
}

func (w *walker) lit(s string) bool {
	if !w.fits(len(s)) {
		return false
	}
	w.dst = append(w.dst, s...)
	return true
}

func (w *walker) num(b []byte) bool {
	if !w.fits(len(b)) {
		return false
	}
	w.dst = append(w.dst, b...)
	return true
}

func (w *walker) int(i int64) bool {
	var b [24]byte
	if i > jsonx.MaxSafeInteger || i < -jsonx.MaxSafeInteger {
		w.sum.Add(NumberRange, 1)
		return w.str(string(strconv.AppendInt(b[:0], i, 10)))
	}
	return w.num(strconv.AppendInt(b[:0], i, 10))
}

func (w *walker) uint(u uint64) bool {
	if u > jsonx.MaxSafeInteger {
		var b [24]byte
		w.sum.Add(NumberRange, 1)
		return w.str(string(strconv.AppendUint(b[:0], u, 10)))
	}
	return w.int(int64(u))
}

// float writes a finite float as RFC 8785 prints it. ECMAScript prints
// integral values below 1e21 in full, so a large float can come out as an
// integer literal beyond 2^53, which a strict reader (ours included) refuses:
// those are written as strings instead, so that attrs never hold an integer
// a double cannot carry and redacting the output again changes nothing.
func (w *walker) float(f float64) bool {
	var b [32]byte
	out, err := jsonx.AppendCanonicalNumber(b[:0], f)
	if err != nil {
		return w.mask(NonFinite, "")
	}
	if math.Abs(f) > jsonx.MaxSafeInteger && !bytesAny(out, ".e") {
		w.sum.Add(NumberRange, 1)
		return w.str(string(out))
	}
	return w.num(out)
}

func bytesAny(b []byte, chars string) bool {
	for _, c := range b {
		if strings.IndexByte(chars, c) >= 0 {
			return true
		}
	}
	return false
}

func (w *walker) number(n json.Number) bool {
	s := string(n)
	// The JSON number grammar (jsonx's), which ParseFloat is laxer about
	// ("0x1p3", "Inf", "1_000").
	if !jsonx.IsNumber(s) {
		return w.mask(UnsupportedType, "")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && math.IsInf(f, 0) {
		return w.mask(NonFinite, "")
	}
	if len(s) > 16 && !strings.ContainsAny(s, ".eE") && math.Abs(f) > jsonx.MaxSafeInteger {
		w.sum.Add(NumberRange, 1)
		return w.str(s) // keep every digit of the literal
	}
	return w.float(f)
}

// str writes a redacted string value.
// A number written as a string (NumberRange) takes its member's name too,
// so that redacting the output again sees the same thing.
func (w *walker) str(s string) bool {
	name := w.name
	w.name = ""
	return w.strNamed(name, s)
}

// strNamed writes a redacted string value that has a name (see scanNamed).
func (w *walker) strNamed(name, s string) bool {
	lim := w.r.lim
	if !utf8.ValidString(s) {
		return w.mask(Binary, "")
	}
	if len(s) > lim.ScanMax {
		return w.mask(Size, "")
	}
	t := w.scanNamed(name, s, w.sum)
	if len(t) > lim.String {
		t = w.cut(t)
	}
	w.last = t
	if !w.fits(jsonx.CanonicalStringLen(t)) {
		return w.mask(Size, "")
	}
	w.dst = jsonx.AppendCanonicalString(w.dst, t)
	return true
}

// cut shortens an already-scanned string to the string limit: a rune and
// marker boundary, the head scanned again (a cut can expose nothing, but a
// marker may be longer than what it replaced), then the size marker.
func (w *walker) cut(t string) string {
	m := table().markers[Size]
	n := w.r.lim.String - len(m)
	for {
		h := cutPoint(t, n)
		head := w.scan(t[:h], w.sum)
		if len(head)+len(m) <= w.r.lim.String || h == 0 {
			w.sum.Add(Size, 1)
			return head + m
		}
		n = h - (len(head) + len(m) - w.r.lim.String)
		if n < 0 {
			n = 0
		}
	}
}

// cutPoint is the largest index ≤ n that is a rune boundary and not inside
// a marker.
func cutPoint(t string, n int) int {
	if n >= len(t) {
		return len(t)
	}
	for n > 0 && !utf8.RuneStart(t[n]) {
		n--
	}
	for p := n - 1; p >= 0 && p >= n-64; p-- {
		if t[p] == '[' {
			if l := markerLen(t[p:]); l > 0 && p+l > n {
				return p
			}
		}
	}
	return n
}

// enter pushes a container for cycle detection; false if it is its own
// ancestor.
func (w *walker) enter(p unsafe.Pointer) bool {
	if p == nil {
		return true
	}
	if slices.Contains(w.anc, p) {
		return false
	}
	w.anc = append(w.anc, p)
	return true
}

func (w *walker) leave(p unsafe.Pointer) {
	if p != nil {
		w.anc = w.anc[:len(w.anc)-1]
	}
}

// value writes v at nesting depth (of v itself if it is a container).
func (w *walker) value(v any, depth int, sens []sensState) bool {
	switch v := v.(type) {
	case string:
		return w.str(v)
	case map[string]any:
		if v == nil {
			return w.lit("null")
		}
		return w.mapAny(v, depth, sens)
	case []any:
		if v == nil {
			return w.lit("null")
		}
		return w.array(len(v), func(i int) (any, string, bool) { return v[i], "", false }, unsafe.Pointer(unsafe.SliceData(v)), depth, sens)
	case json.Number:
		return w.number(v)
	case bool:
		if v {
			return w.lit("true")
		}
		return w.lit("false")
	case nil:
		return w.lit("null")
	case float64:
		return w.float(v)
	case int:
		return w.int(int64(v))
	case int64:
		return w.int(v)
	case reflectElem:
		return w.reflect(v.v, depth, sens)
	case []string:
		if v == nil {
			return w.lit("null")
		}
		return w.array(len(v), func(i int) (any, string, bool) { return nil, v[i], true }, unsafe.Pointer(unsafe.SliceData(v)), depth, sens)
	case map[string]string:
		if v == nil {
			return w.lit("null")
		}
		return w.mapReflect(reflect.ValueOf(v), depth, sens)
	}
	return w.reflect(reflect.ValueOf(v), depth, sens)
}

// reflect handles every other type by kind, never by method.
func (w *walker) reflect(rv reflect.Value, depth int, sens []sensState) bool {
	switch rv.Kind() {
	case reflect.Invalid:
		return w.lit("null")
	case reflect.String:
		return w.str(rv.String())
	case reflect.Bool:
		if rv.Bool() {
			return w.lit("true")
		}
		return w.lit("false")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return w.int(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return w.uint(rv.Uint())
	case reflect.Float32, reflect.Float64:
		return w.float(rv.Float())
	case reflect.Interface:
		if rv.IsNil() {
			return w.lit("null")
		}
		return w.reflect(rv.Elem(), depth, sens)
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return w.mask(UnsupportedType, "")
		}
		if rv.IsNil() {
			return w.lit("null")
		}
		return w.mapReflect(rv, depth, sens)
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return w.mask(Binary, "")
		}
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return w.lit("null")
		}
		var p unsafe.Pointer
		if rv.Kind() == reflect.Slice && rv.Len() > 0 {
			p = rv.UnsafePointer()
		}
		return w.array(rv.Len(), func(i int) (any, string, bool) {
			e := rv.Index(i)
			if e.Kind() == reflect.String {
				return nil, e.String(), true
			}
			return reflectElem{e}, "", false
		}, p, depth, sens)
	}
	return w.mask(UnsupportedType, "")
}

// reflectElem carries a reflect.Value through value() without Interface(),
// which would panic on values reached through unexported fields and would
// box every element.
type reflectElem struct{ v reflect.Value }

func (w *walker) mapAny(m map[string]any, depth int, sens []sensState) bool {
	w.name = ""
	if depth > w.r.lim.Depth {
		return w.mask(Depth, "")
	}
	p := unsafe.Pointer(reflect.ValueOf(m).UnsafePointer())
	if !w.enter(p) {
		return w.mask(Cycle, "")
	}
	defer w.leave(p)
	ms := w.members(depth)
	for k, v := range m {
		if key, ok := w.key(k); ok {
			ms = append(ms, member{key: key, orig: k, val: v})
		}
	}
	return w.writeMembers(ms, depth, sens)
}

func (w *walker) mapReflect(rv reflect.Value, depth int, sens []sensState) bool {
	w.name = ""
	if depth > w.r.lim.Depth {
		return w.mask(Depth, "")
	}
	p := rv.UnsafePointer()
	if !w.enter(p) {
		return w.mask(Cycle, "")
	}
	defer w.leave(p)
	ms := w.members(depth)
	it := rv.MapRange()
	for it.Next() {
		k := it.Key().String()
		if key, ok := w.key(k); ok {
			v := it.Value()
			if v.Kind() == reflect.String {
				ms = append(ms, member{key: key, orig: k, str: v.String(), kind: 1})
			} else {
				ms = append(ms, member{key: key, orig: k, rv: v, kind: 2})
			}
		}
	}
	return w.writeMembers(ms, depth, sens)
}

// order returns an index slice 0..n-1 reused per depth.
func (w *walker) order(depth, n int) []int32 {
	for len(w.orders) <= depth {
		w.orders = append(w.orders, nil)
	}
	o := w.orders[depth][:0]
	for i := range n {
		o = append(o, int32(i))
	}
	w.orders[depth] = o
	return o
}

func (w *walker) members(depth int) []member {
	for len(w.bufs) <= depth {
		w.bufs = append(w.bufs, nil)
	}
	return w.bufs[depth][:0]
}

// key validates and redacts a map key; false drops the member.
func (w *walker) key(k string) (string, bool) {
	if !utf8.ValidString(k) {
		w.sum.Add(Binary, 1)
		return "", false
	}
	if len(k) > w.r.lim.Key {
		w.sum.Add(Size, 1)
		return "", false
	}
	return w.scan(k, w.sum), true
}

func (w *walker) writeMembers(ms []member, depth int, sens []sensState) bool {
	defer func() {
		clear(ms)
		w.bufs[depth] = ms[:0]
	}()
	if !w.fits(2) {
		return false
	}
	// Sort indexes, not members: moving small integers is cheaper than
	// moving pointer-laden structs (no write barriers).
	order := w.order(depth, len(ms))
	slices.SortFunc(order, func(a, b int32) int { return jsonx.CompareKeys(ms[a].key, ms[b].key) })
	w.dst = append(w.dst, '{')
	w.open++
	written := 0
	for oi, i := range order {
		m := &ms[i]
		if oi > 0 && m.key == ms[order[oi-1]].key {
			w.sum.Add(Collection, 1) // two keys redacted to the same marker
			continue
		}
		if written >= w.r.lim.Members {
			w.sum.Add(Collection, 1)
			continue
		}
		mark := len(w.dst)
		if written > 0 {
			w.dst = append(w.dst, ',')
		}
		if !w.fits(jsonx.CanonicalStringLen(m.key) + 1) {
			w.dst = w.dst[:mark]
			w.sum.Add(Size, 1)
			continue
		}
		w.dst = jsonx.AppendCanonicalString(w.dst, m.key)
		w.dst = append(w.dst, ':')
		sensitive, next := child(sens, m.orig, -1)
		var ok bool
		switch {
		case sensitive:
			ok = w.mask(Sensitive, w.rawOf(m))
		case w.unsafeKey(m.key):
			ok = w.maskUnsafe(m, depth+1)
		default:
			ok = w.memberValue(m, depth+1, next)
		}
		if !ok {
			w.dst = w.dst[:mark]
			w.sum.Add(Size, 1)
			continue
		}
		written++
	}
	w.dst = append(w.dst, '}')
	w.open--
	return true
}

func (w *walker) memberValue(m *member, depth int, sens []sensState) bool {
	switch m.kind {
	case 1:
		return w.strNamed(m.key, m.str)
	case 2:
		if m.rv.Kind() == reflect.String {
			return w.strNamed(m.key, m.rv.String())
		}
		w.name = m.key
		defer func() { w.name = "" }()
		return w.reflect(m.rv, depth, sens)
	}
	if e, ok := m.val.(reflectElem); ok {
		return w.reflect(e.v, depth, sens)
	}
	if s, ok := m.val.(string); ok {
		return w.strNamed(m.key, s)
	}
	w.name = m.key
	defer func() { w.name = "" }()
	return w.value(m.val, depth, sens)
}

// rawOf is the member's scalar text for the keyed hash ("" for others).
func (w *walker) rawOf(m *member) string {
	switch m.kind {
	case 1:
		return m.str
	case 2:
		if m.rv.Kind() == reflect.String {
			return m.rv.String()
		}
		return ""
	}
	switch v := m.val.(type) {
	case string:
		return v
	case json.Number:
		return string(v)
	}
	return ""
}

// maskUnsafe masks the value of an unsafe key, except values that carry
// nothing (null, booleans, "") and values that are already markers, so that
// redaction stays idempotent.
func (w *walker) maskUnsafe(m *member, depth int) bool {
	if m.kind == 0 {
		switch v := m.val.(type) {
		case nil, bool:
			return w.value(v, depth, nil)
		case string:
			if v == "" || IsMarker(v) || w.benignMember(v) {
				return w.str(v)
			}
		}
	}
	if m.kind == 1 && (m.str == "" || IsMarker(m.str) || w.benignMember(m.str)) {
		return w.str(m.str)
	}
	return w.mask(UnsafeKey, w.rawOf(m))
}

// array writes n items read through at(i), which returns either a value or
// a string (ok true). argv: an item "--password" (a flag named like a
// secret, without "=value") masks the item after it.
func (w *walker) array(n int, at func(int) (any, string, bool), p unsafe.Pointer, depth int, sens []sensState) bool {
	w.name = ""
	if depth > w.r.lim.Depth {
		return w.mask(Depth, "")
	}
	if !w.enter(p) {
		return w.mask(Cycle, "")
	}
	defer w.leave(p)
	if !w.fits(2) {
		return false
	}
	w.dst = append(w.dst, '[')
	w.open++
	keep := n
	if n > w.r.lim.Items {
		keep = w.r.lim.Items - 1
	}
	written := 0
	secretNext := false
	prev := "" // the string item before, as the name of the next one
	for i := 0; i < keep; i++ {
		v, s, isStr := at(i)
		if !isStr {
			if str, ok := v.(string); ok {
				s, isStr = str, true
			}
		}
		mark := len(w.dst)
		if written > 0 {
			w.dst = append(w.dst, ',')
		}
		sensitive, next := child(sens, "", i)
		var ok bool
		w.last = ""
		switch {
		case sensitive:
			raw := s
			if !isStr {
				raw = ""
			}
			ok = w.mask(Sensitive, raw)
		case secretNext && isStr && s != "" && !IsMarker(s) && !w.benignMember(s):
			ok = w.mask(UnsafeKey, s)
		case isStr:
			ok = w.strNamed(prev, s)
		default:
			w.name = prev
			if e, isRE := v.(reflectElem); isRE {
				ok = w.reflect(e.v, depth+1, next)
			} else {
				ok = w.value(v, depth+1, next)
			}
		}
		secretNext = isStr && isSecretFlag(s)
		// The name of the next item is this one as written (redacted), so
		// that redacting the output again sees the same context.
		prev = ""
		if isStr && ok && len(w.last) <= maxKeyClassify {
			prev = w.last
		}
		if !ok {
			w.dst = w.dst[:mark]
			w.sum.Add(Size, 1)
			continue
		}
		written++
	}
	if keep < n {
		m := table().markers[Collection]
		if w.fits(len(m) + 3) {
			if written > 0 {
				w.dst = append(w.dst, ',')
			}
			w.dst = append(w.dst, '"')
			w.dst = append(w.dst, m...)
			w.dst = append(w.dst, '"')
		}
		w.sum.Add(Collection, n-keep)
	}
	w.dst = append(w.dst, ']')
	w.open--
	return true
}

// unsafeKey classifies a map key, remembering the answer: the same few
// keys recur in every event. The cache is bounded (keys are input).
func (w *walker) unsafeKey(k string) bool {
	if v, ok := w.keyCache[k]; ok {
		return v
	}
	v := unsafeName(stripMarkers(k))
	if len(w.keyCache) < maxKeyCache && len(k) <= 64 {
		if w.keyCache == nil {
			w.keyCache = make(map[string]bool, 64)
		}
		w.keyCache[k] = v
	}
	return v
}

const maxKeyCache = 1024

// stripMarkers removes the markers from a redacted key, so that a key is
// classified the same way whether it is seen before or after redaction.
func stripMarkers(k string) string {
	if !strings.Contains(k, markerPrefix) {
		return k
	}
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		if k[i] == '[' {
			if n := markerLen(k[i:]); n > 0 {
				i += n - 1
				continue
			}
		}
		b.WriteByte(k[i])
	}
	return b.String()
}

// isSecretFlag: "--password", "-token", "--api-key" (no "=value": that form
// is handled inside the string by the text rules).
func isSecretFlag(s string) bool {
	if len(s) < 4 || s[0] != '-' || strings.IndexByte(s, '=') >= 0 || len(s) > maxKeyClassify {
		return false
	}
	name := strings.TrimPrefix(s[1:], "-")
	return letters[name[0]] && unsafeName(name) // "-----BEGIN PRIVATE KEY-----" is no flag
}
