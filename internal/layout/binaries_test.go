package layout

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// allDeps lists, for every package matching pattern, every package it
// links (the standard library's and other modules' too), keyed as deps is.
func allDeps(t *testing.T, pattern string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, pattern)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %s: %v\n%s", pattern, err, ee.Stderr)
		}
		t.Fatalf("go list %s: %v", pattern, err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			m[strings.TrimPrefix(f[0], module)] = f[1:]
		}
	}
	if len(m) == 0 {
		t.Fatalf("go list %s: no packages", pattern)
	}
	return m
}

// binaryRules: what each binary must not link, and why. A package matches
// a rule when its import path equals it or starts with it and "/".
var binaryRules = []struct {
	pkg, forbidden, why string
}{
	{"cmd/artexec", "github.com/nats-io", "artexec runs one command; it has no queue to reach"},
	{"cmd/artgoal", "github.com/nats-io", "evidence reads file queues only (lib/queue/file.Location)"},
	{"cmd/artexec", "net", "a plain run links no networking code: network allow (its proxy and allowlist grammar) is artexec-cli's, linked through lib/execx/netallow"},
	{"cmd/artexec", "github.com/art-runtime/art/lib/execx/netallow", "artexec hands a run with network allow to artexec-cli"},
	{"lib/execx", "net", "network allow's implementation is registered by lib/execx/netallow, so lib/execx links no networking code"},
	{"lib/netproxy/account", "net", "the accounting types are plain data for runners that do not link the proxy"},
	{"cmd/artgoal", "net/http", "a goal journal talks to no server"},
	{"cmd/artobs", "net/http", "redaction and sinks are local files"},
	{"lib/netproxy", "net/http", "the proxy parses requests itself and relays responses as bytes"},
	{"cmd/artexec-shim", "github.com/nats-io", "the supervisor only starts and reaps a task"},
	{"cmd/artexec-shim", "net/http", "the supervisor only starts and reaps a task"},
	{"cmd/artq", "go.opentelemetry.io/otel/sdk", "OpenTelemetry export runs in artobs-otlp, fed through a pipe (lib/obs/otlp)"},
	{"cmd/artq", "google.golang.org/grpc", "the OTLP exporters' generated code links gRPC: it lives in artobs-otlp"},
	{"cmd/artq", "go.opentelemetry.io/otel/exporters", "the exporters live in artobs-otlp"},
	{"cmd/artagent", "go.opentelemetry.io/otel/sdk", "OpenTelemetry export runs in artobs-otlp, fed through a pipe (lib/obs/otlp)"},
	{"cmd/artagent", "google.golang.org/grpc", "the OTLP exporters' generated code links gRPC: it lives in artobs-otlp"},
	{"cmd/artagent", "go.opentelemetry.io/otel/exporters", "the exporters live in artobs-otlp"},
	{"cmd/artexec", "github.com/alecthomas/kong", "artexec is the hot path of every task's start: its grammar is artexec-cli's (internal/execcli)"},
	{"cmd/artexec", "github.com/art-runtime/art/lib/obs", "--events is artexec-cli's: the hot path links no redactor"},
	{"internal/execcli/runcmd", "github.com/alecthomas/kong", "the run command the artexec binary is made of"},
	{"internal/clibase", "github.com/alecthomas/kong", "what binaries without kong share with the others"},
	{"cmd/artexec", "go.opentelemetry.io/otel/sdk", "artexec exports nothing"},
	{"cmd/artexec", "google.golang.org/grpc", "artexec exports nothing"},
	{"lib/obs/otlp", "go.opentelemetry.io/otel/sdk", "the tools' side of the export links the trace API only"},
	{"lib/obs/otlp", "google.golang.org/grpc", "the tools' side of the export links the trace API only"},
	{"lib/goal", "github.com/art-runtime/art/lib/queue", "a journal names task states (lib/vocab), it does not run a queue"},
	{"lib/goal", "github.com/art-runtime/art/lib/execx", "a goal journal must not link a sandbox"},
	{"lib/goal", "github.com/art-runtime/art/lib/obs", "header bounds come from lib/vocab, not the sink"},
	{"lib/vocab", "github.com/art-runtime/art/lib/queue", "vocab is the leaf the journal and the queue share"},
	{"lib/evidence", "github.com/nats-io", "evidence reads file queues only"},
}

// TestBinariesLinkWhatTheyUse holds binaryRules, and logs each binary's
// package count (go test -v ./internal/layout shows them).
func TestBinariesLinkWhatTheyUse(t *testing.T) {
	all := allDeps(t, "./...")
	for _, r := range binaryRules {
		ds, ok := all[r.pkg]
		if !ok {
			t.Errorf("rule for %s: no such package", r.pkg)
			continue
		}
		for _, d := range ds {
			if d == r.forbidden || strings.HasPrefix(d, r.forbidden+"/") {
				t.Errorf("%s links %s: %s", r.pkg, d, r.why)
				break
			}
		}
	}
	// The rules see real edges: artq does link the NATS client.
	seen := false
	for _, d := range all["cmd/artq"] {
		seen = seen || strings.HasPrefix(d, "github.com/nats-io/")
	}
	if !seen {
		t.Error("cmd/artq links no github.com/nats-io package: the rules above could not fail")
	}
	// And the exporter process does link the SDK and gRPC the rules keep
	// out of artq and artagent.
	var sdk, grpc bool
	for _, d := range all["cmd/artobs-otlp"] {
		sdk = sdk || strings.HasPrefix(d, "go.opentelemetry.io/otel/sdk/")
		grpc = grpc || strings.HasPrefix(d, "google.golang.org/grpc/")
	}
	if !sdk || !grpc {
		t.Errorf("cmd/artobs-otlp links the OpenTelemetry SDK %v, gRPC %v: the OTLP rules above could not fail", sdk, grpc)
	}
	var bins []string
	for pkg := range all {
		if strings.HasPrefix(pkg, "cmd/") {
			bins = append(bins, pkg)
		}
	}
	sort.Strings(bins)
	for _, b := range bins {
		t.Logf("%s links %d packages", b, len(all[b]))
	}
}

// TestStageOnlyInRunnerAndShim: the exec stage (namespaces, Landlock,
// seccomp) is imported only by the runner (lib/execx) and the supervisor
// (lib/execx/shim), so no other code path can set up a sandbox of its own.
func TestStageOnlyInRunnerAndShim(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	stage := module + "lib/execx/stage"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		if pkg == "lib/execx" || pkg == "lib/execx/shim" || under(pkg, "lib/execx/stage") {
			continue
		}
		for _, d := range f[1:] {
			if d == stage || strings.HasPrefix(d, stage+"/") {
				t.Errorf("%s imports %s: only lib/execx and lib/execx/shim may", pkg, strings.TrimPrefix(d, module))
			}
		}
	}
}
