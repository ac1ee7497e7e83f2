package webcli

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	os.WriteFile(good, []byte("0123456789abcdefXYZ\n"), 0o600)
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte("0123456789abcdefXYZ\n"), 0o644)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	base := func() Flags { return Flags{Listen: DefaultListen, Backend: "file"} }
	cases := []struct {
		name     string
		edit     func(*Flags)
		code     int    // 0: accepted
		mention  string // the error names this
		loopback bool
		token    string
	}{
		{"default", func(*Flags) {}, 0, "", true, ""},
		{"localhost", func(f *Flags) { f.Listen = "localhost:0" }, 0, "", true, ""},
		{"ipv6 loopback", func(f *Flags) { f.Listen = "[::1]:8780" }, 0, "", true, ""},
		{"all interfaces without token", func(f *Flags) { f.Listen = ":8780" }, exitcode.Usage, "--listen", false, ""},
		{"0.0.0.0 without token", func(f *Flags) { f.Listen = "0.0.0.0:8780" }, exitcode.Usage, "not a loopback address", false, ""},
		{"host name without token", func(f *Flags) { f.Listen = "box.example:8780" }, exitcode.Usage, "--token-file", false, ""},
		{"0.0.0.0 with token", func(f *Flags) { f.Listen, f.Token = "0.0.0.0:8780", "0123456789abcdef" }, 0, "", false, "0123456789abcdef"},
		{"0.0.0.0 with token file", func(f *Flags) { f.Listen, f.TokenFile = "0.0.0.0:8780", good }, 0, "", false, "0123456789abcdefXYZ"},
		{"short token", func(f *Flags) { f.Token = "short" }, exitcode.Usage, "--token", true, ""},
		{"both tokens", func(f *Flags) { f.Token, f.TokenFile = "0123456789abcdef", good }, exitcode.Usage, "give one", true, ""},
		{"token file readable by others", func(f *Flags) { f.TokenFile = open }, exitcode.Usage, "chmod 600", true, ""},
		{"empty token file", func(f *Flags) { f.TokenFile = empty }, exitcode.Usage, "empty", true, ""},
		{"missing token file", func(f *Flags) { f.TokenFile = filepath.Join(dir, "nope") }, exitcode.Usage, "--token-file", true, ""},
		{"no port", func(f *Flags) { f.Listen = "127.0.0.1" }, exitcode.Usage, "--listen", true, ""},
		{"bad port", func(f *Flags) { f.Listen = "127.0.0.1:http" }, exitcode.Usage, "--listen", true, ""},
		{"port too large", func(f *Flags) { f.Listen = "127.0.0.1:70000" }, exitcode.Usage, "--listen", true, ""},
		{"bad queue", func(f *Flags) { f.Queue = []string{"../x"} }, exitcode.Usage, "--queue", true, ""},
		{"bad backend", func(f *Flags) { f.Backend = "redis://x" }, exitcode.Usage, "--backend", true, ""},
		{"nats without queues", func(f *Flags) { f.Backend = "nats://127.0.0.1:4222" }, exitcode.Usage, "--queue", true, ""},
		{"nats with queues", func(f *Flags) { f.Backend, f.Queue = "nats://127.0.0.1:4222", []string{"a"} }, 0, "", true, ""},
		{"allow-host with port", func(f *Flags) { f.AllowHost = []string{"a.example:80"} }, exitcode.Usage, "--allow-host", true, ""},
		{"transcripts not a dir", func(f *Flags) { f.Transcripts = []string{good} }, exitcode.Usage, "--transcripts", true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := base()
			c.edit(&f)
			s, err := f.Check()
			if c.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if s.Loopback != c.loopback || s.Token != c.token {
					t.Fatalf("loopback %v token %q", s.Loopback, s.Token)
				}
				return
			}
			var ce exitcode.Coder
			if err == nil || !errors.As(err, &ce) || ce.ExitCode() != c.code || !strings.Contains(err.Error(), c.mention) {
				t.Fatalf("err %v, want exit %d naming %q", err, c.code, c.mention)
			}
		})
	}
}

// TestArgs: the flags survive the trip to artobs-web, except the token,
// which travels in the environment.
func TestArgs(t *testing.T) {
	f := Flags{Listen: "0.0.0.0:1", Backend: "file", Token: "0123456789abcdef-secret", AllowHost: []string{"a.example"},
		Queue: []string{"q1", "q2"}, Sink: []string{"/s.jsonl"}, Transcripts: []string{"/t"}}
	args := f.Args()
	want := []string{"--listen", "0.0.0.0:1", "--backend", "file", "--allow-host", "a.example", "--queue", "q1", "--queue", "q2", "--sink", "/s.jsonl", "--transcripts", "/t"}
	if !slices.Equal(args, want) {
		t.Fatalf("args %q\nwant %q", args, want)
	}
	if strings.Contains(strings.Join(args, " "), "secret") {
		t.Fatal("the token is in the arguments")
	}
}
