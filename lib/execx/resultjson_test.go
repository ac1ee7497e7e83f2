package execx

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/netproxy/account"
)

// fillResult sets every field of v (a struct, by reflection) to a
// non-zero value built from s and n, so a field WriteJSON forgets, or a
// new one, shows as a difference from encoding/json.
func fillResult(v reflect.Value, s string, n int64) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Int, reflect.Int64:
		v.SetInt(n)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillResult(v.Index(i), s, n)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillResult(v.Elem(), s, n)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(1_700_000_000, n).UTC()))
			return
		}
		for i := range v.NumField() {
			fillResult(v.Field(i), s, n)
		}
	}
}

func checkResultJSON(t *testing.T, r *Result) {
	t.Helper()
	var want, got bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	werr := enc.Encode(r)
	if err := r.WriteJSON(&got); (err != nil) != (werr != nil) {
		t.Fatalf("WriteJSON: %v; encoding/json: %v", err, werr)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("WriteJSON:\n%s\nencoding/json:\n%s", got.Bytes(), want.Bytes())
	}
}

func TestResultJSON(t *testing.T) {
	odd := "a \"q\" \\ \b\f\n\r\t\x00\x1f\x7f <&> \u2028\u2029 é 😀 \xff\xfe\xc3 end"
	full := &Result{}
	fillResult(reflect.ValueOf(full).Elem(), odd, 123456789)
	noDest := *full
	net := *full.Network
	net.Allowed, net.Refused = nil, nil
	noDest.Network = &net
	zeroTime := Result{}
	zeroTime.Isolation.Enforced = []string{}
	long := Result{Output: strings.Repeat("x", 3*resultChunk) + odd + strings.Repeat("\n", resultChunk), Network: &NetworkReport{Mode: "host"}}
	for name, r := range map[string]*Result{
		"every field":             full,
		"no destinations":         &noDest,
		"zero":                    {},
		"zero with empty enforce": &zeroTime,
		"long output":             &long,
		"destinations":            {Network: &NetworkReport{Mode: "allow", Allowed: []account.Allowed{{}}}},
		"year 10000":              {StartedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"a zone":                  {StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600+30*60))},
	} {
		t.Run(name, func(t *testing.T) { checkResultJSON(t, r) })
	}
}

func FuzzResultJSON(f *testing.F) {
	f.Add("out\xff\u2028\x01", "sig", int64(-1), true)
	f.Fuzz(func(t *testing.T, s, s2 string, n int64, b bool) {
		r := &Result{Program: s, Output: s + s2, Error: s2, Signal: s2, ExitCode: int(n), DurationMS: n,
			TimedOut: b, Killed: b, StartedAt: time.Unix(0, n), Isolation: IsolationReport{Enforced: []string{s2}}}
		if b {
			r.Network = &NetworkReport{Mode: NetworkMode(s), AllowedOmitted: int(n)}
		}
		checkResultJSON(t, r)
	})
}
