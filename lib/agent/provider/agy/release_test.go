package agy

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/agent/provider"
)

var fakeRelease, _ = filepath.Abs("testdata/fake-agy-release")

func releaseAgy(t *testing.T, version, kase string, stream bool) *Provider {
	t.Helper()
	t.Setenv("AGY_VERSION", version)
	t.Setenv("AGY_CASE", kase)
	p, err := New(Config{Path: fakeRelease, Env: []string{"AGY_VERSION", "AGY_CASE", "AGY_REPLY"}, Stream: stream, Log: &syncBuf{}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The adapter against the output shapes of each release range, the
// version probe choosing how to parse them.
func TestReleaseShapes(t *testing.T) {
	verify := `{"action":"verify","reason":"check the fix"}`
	tests := []struct {
		version, kase string
		stream        bool
		is            error  // a provider error, or nil for a reply
		msg           string // in the error
		denied        []string
		usage         *provider.Usage
	}{
		{version: "1.1.8", kase: "ok", usage: &provider.Usage{InputTokens: 1200, OutputTokens: 40, TotalTokens: 1240}},
		{version: "1.1.20", kase: "ok", usage: &provider.Usage{InputTokens: 1200, OutputTokens: 40, TotalTokens: 1240}},
		{version: "1.2.7", kase: "ok", usage: &provider.Usage{InputTokens: 1200, OutputTokens: 40, TotalTokens: 1550, CacheReadTokens: 900, ThinkingTokens: 310}},
		{version: "1.2.7", kase: "ok", stream: true, usage: &provider.Usage{InputTokens: 1200, OutputTokens: 40, TotalTokens: 1550, CacheReadTokens: 900, ThinkingTokens: 310}},
		{version: "1.1.20", kase: "timeout", is: provider.ErrTimeout, msg: `agy 1.1.20 reported "timeout waiting for response"`},
		{version: "1.2.7", kase: "timeout", is: provider.ErrTimeout, msg: "print timeout"},
		{version: "1.2.7", kase: "denied", denied: []string{"run_command (Run command)", "write_to_file (Write file)"}},
		{version: "1.2.7", kase: "denied", stream: true, denied: []string{"run_command (Run command)", "write_to_file (Write file)"}},
		{version: "1.1.20", kase: "denied", denied: []string{"run_command (auto-denied in headless mode)"}},
		{version: "1.2.7", kase: "flag-error", msg: `exit 2: agy refused its arguments (version 1.2.7): invalid value "`},
		{version: "1.2.7", kase: "step-error", stream: true, msg: "an agent_response step ended in ERROR (final status SUCCESS): model stream interrupted"},
	}
	for _, tt := range tests {
		name := tt.version + "/" + tt.kase
		if tt.stream {
			name += "/stream"
		}
		t.Run(name, func(t *testing.T) {
			p := releaseAgy(t, tt.version, tt.kase, tt.stream)
			reply, err := p.Decide(context.Background(), request())
			if f, _ := p.Probe(context.Background()); f.Version.String() != tt.version || !f.JSONSchema || !f.PrintTimeout {
				t.Fatalf("probe %+v", f)
			}
			if tt.msg != "" || tt.is != nil {
				var pe *provider.Error
				if !errors.As(err, &pe) || (tt.is != nil && !errors.Is(err, tt.is)) || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("error %v; want %v containing %q", err, tt.is, tt.msg)
				}
				if strings.Contains(err.Error(), "Usage of agy") || strings.Contains(err.Error(), "-p, --print") {
					t.Fatalf("error %q reports the usage text, not the cause", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.denied != nil {
				if !reflect.DeepEqual(reply.Denied, tt.denied) {
					t.Fatalf("denied %q; want %q", reply.Denied, tt.denied)
				}
				return
			}
			d, derr := provider.DecodeDecision([]byte(reply.Text))
			if derr != nil {
				t.Fatalf("reply %q: %v", reply.Text, derr)
			}
			if b, _ := d.MarshalJSON(); string(b) != verify {
				t.Fatalf("decision %s", b)
			}
			if !reflect.DeepEqual(reply.Usage, tt.usage) {
				t.Fatalf("usage %+v; want %+v", reply.Usage, tt.usage)
			}
		})
	}
}

// The raw-newline repair is chosen by version: a release known to write
// proper JSON gets no such tolerance.
func TestRawNewlineOnlyFor118(t *testing.T) {
	out := "{\"status\":\"SUCCESS\",\"response\":\"{\n\\\"action\\\":\\\"verify\\\"}\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}\n"
	for _, tt := range []struct {
		v  Version
		ok bool
	}{{Version{1, 1, 8}, true}, {Version{}, true}, {Version{1, 2, 7}, false}} {
		_, err := parseJSON(out, nil, false, tt.v.within(rawNewlineJSON[0], rawNewlineJSON[1]))
		if (err == nil) != tt.ok {
			t.Errorf("version %s: %v", tt.v, err)
		}
	}
	if got := escapeRawControls("{\"a\":\"x\ny\",\n\"b\":\"\\\"\t\"}"); got != "{\"a\":\"x\\u000ay\",\n\"b\":\"\\\"\\u0009\"}" {
		t.Fatalf("escaped %q", got)
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]Version{"1.2.7\n": {1, 2, 7}, "agy version 1.1.28 (abc)": {1, 1, 28}, "dev": {}} {
		if got := parseVersion(in); got != want {
			t.Errorf("%q: %v", in, got)
		}
	}
	if !(Version{1, 1, 20}).within(errorTimeout[0], errorTimeout[1]) || (Version{1, 1, 28}).within(errorTimeout[0], errorTimeout[1]) {
		t.Fatal("version ranges")
	}
}
