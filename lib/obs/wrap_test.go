package obs

import (
	"strings"
	"testing"
	"time"

	"github.com/art-runtime/art/lib/exitcode"
)

func TestTemplates(t *testing.T) {
	rec := map[string]any{"task": "t1", "n": map[string]any{"k": "v"}}
	for _, tt := range []struct{ tmpl, want, err string }{
		{"task/{task}", "task/t1", ""},
		{"{n.k}-{task}", "v-t1", ""},
		{"lit", "lit", ""},
		{"{{x}}", "{x}", ""},
		{"{missing}", "", `field "missing" is missing`},
		{"{n}", "", `field "n" is object`},
		{"{n.k.z}", "", `field "n.k.z" is missing`},
	} {
		tp, err := ParseTemplate(tt.tmpl)
		if err != nil {
			t.Fatalf("ParseTemplate(%q) = %v", tt.tmpl, err)
		}
		got, err := tp.Expand(rec)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Expand(%q) = %q, %v; want error %q", tt.tmpl, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tt.tmpl, got, err, tt.want)
		}
	}
	for _, bad := range []string{"{", "a}", "{}"} {
		if _, err := ParseTemplate(bad); err == nil {
			t.Errorf("ParseTemplate(%q) accepted", bad)
		}
	}
}

func mustTemplate(t *testing.T, s string) Template {
	t.Helper()
	tp, err := ParseTemplate(s)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestWrapQueueRecord(t *testing.T) {
	w := Wrap{Subject: mustTemplate(t, "task/{task}"), Type: mustTemplate(t, "queue.{type}"), Role: RoleDispatcher, TimeField: "time"}
	d, err := w.Draft([]byte(`{"seq":3,"time":"2024-05-01T10:00:00.000000001Z","type":"enqueued","task":"t-1","attempt":0,"manifest":{"program":"curl","args":["-H","Authorization: Bearer abcdefghijklmnop0123"]},"crc":12345}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Subject != "task/t-1" || d.Type != "queue.enqueued" || d.Role != RoleDispatcher || !d.Time.Equal(time.Date(2024, 5, 1, 10, 0, 0, 1, time.UTC)) {
		t.Errorf("draft = %+v", d)
	}
	e := New(Options{})
	env, err := e.Seal(d, 1)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env.line), "abcdefghijklmnop0123") || env.Redaction().Count() != 1 {
		t.Errorf("wrapped record not redacted: %s", env.line)
	}
	for _, bad := range []string{`[1]`, `{"type":"x"}`, `{"task":"t","type":"has space"}`, `{"task":{},"type":"x"}`} {
		if _, err := w.Draft([]byte(bad)); err == nil || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("Draft(%s) = %v; want a usage error", bad, err)
		}
	}
	// Foreign integers beyond 2^53 are kept (as strings after redaction).
	d, err = w.Draft([]byte(`{"task":"t","type":"x","big":123456789012345678901}`))
	if err != nil {
		t.Fatal(err)
	}
	env, _ = e.Seal(d, 1)
	if !strings.Contains(string(env.line), `"big":"123456789012345678901"`) {
		t.Errorf("big integer: %s", env.line)
	}
}
