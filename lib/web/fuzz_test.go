package web

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
)

// FuzzHostAllowed: the Host check never panics, and accepts a name only
// when it is an IP literal, the listen host, localhost on loopback, or an
// allowed name, always with the listen port.
func FuzzHostAllowed(f *testing.F) {
	for _, s := range []string{"127.0.0.1:8780", "localhost:8780", "evil.example:8780", "[::1]:8780", "127.0.0.1", ":8780", "LOCALHOST.:8780", "ci.example.com:8780", "[::ffff:127.0.0.1]:8780", "a:b:c"} {
		f.Add(s)
	}
	s := New(Config{Listen: "127.0.0.1:8780", Loopback: true, AllowHost: []string{"ci.example.com"}})
	f.Fuzz(func(t *testing.T, host string) {
		if !s.hostAllowed(host) {
			return
		}
		h, p, err := net.SplitHostPort(host)
		if err != nil || p != "8780" {
			t.Fatalf("accepted %q: not HOST:8780", host)
		}
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if net.ParseIP(h) == nil && h != "127.0.0.1" && h != "localhost" && h != "ci.example.com" {
			t.Fatalf("accepted %q: a name that is none of the allowed", host)
		}
	})
}

// FuzzTranscriptOf: any manifest is read without panic, and the path found
// follows a --transcript argument.
func FuzzTranscriptOf(f *testing.F) {
	f.Add([]byte(`{"program":"artagent","args":["run","--transcript","/t/a.jsonl"]}`))
	f.Add([]byte(`{"program":"artagent","args":["--transcript=/t/b.jsonl"]}`))
	f.Add([]byte(`{"args":["--transcript"]}`))
	f.Add([]byte(`{"args":"--transcript"}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, manifest []byte) {
		p := TranscriptOf(manifest)
		if p == "" {
			return
		}
		var m struct {
			Args []string `json:"args"`
		}
		if json.Unmarshal(manifest, &m) != nil {
			return // gjson reads what a strict decoder refuses: nothing to compare
		}
		for i, a := range m.Args {
			if a == "--transcript="+p || (a == "--transcript" && i+1 < len(m.Args) && m.Args[i+1] == p) {
				return
			}
		}
		t.Fatalf("TranscriptOf(%s) = %q: no --transcript argument names it", manifest, p)
	})
}
