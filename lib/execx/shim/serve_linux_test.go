//go:build linux

package shim

import "testing"

// A serving supervisor's mode says its namespaces' ids and the bounding
// set its tasks keep; anything else is refused.
func TestServeOpts(t *testing.T) {
	for _, c := range []struct {
		opts     string
		ids      string
		keep     uint64
		dropBset bool
		ok       bool
	}{
		{"", "", 0, false, true},
		{":0:0", "0:0", 0, false, true},
		{"/bset:0", "", 0, true, true},
		{"/bset:400", "", 0x400, true, true},
		{":1000:1000/bset:1", "1000:1000", 1, true, true},
		{"x", "", 0, false, false},
		{":", "", 0, false, false},
		{"/bset:", "", 0, false, false},
		{"/bset:zz", "", 0, false, false},
		{"/bset:10000000000000000", "", 0, false, false}, // over 64 bits
	} {
		ids, keep, drop, ok := serveOpts(c.opts)
		if ids != c.ids || keep != c.keep || drop != c.dropBset || ok != c.ok {
			t.Errorf("serveOpts(%q) = %q, %#x, %v, %v; want %q, %#x, %v, %v", c.opts, ids, keep, drop, ok, c.ids, c.keep, c.dropBset, c.ok)
		}
	}
}
