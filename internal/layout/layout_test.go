// Package layout holds the test that keeps the libraries' import graph
// the one docs/architecture.md draws.
package layout

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/art-runtime/art/"

// deps lists, for every package matching pattern, the module's packages
// and the kong package it depends on, directly or not (go list -deps
// follows imports, never tests), from allDeps.
func deps(t *testing.T, pattern string) map[string][]string {
	t.Helper()
	m := map[string][]string{}
	for pkg, ds := range allDeps(t, pattern) {
		m[pkg] = nil
		for _, d := range ds {
			if strings.HasPrefix(d, module) || strings.Contains(d, "/kong") {
				m[pkg] = append(m[pkg], strings.TrimPrefix(d, module))
			}
		}
	}
	return m
}

// under reports whether pkg is dir or a package below it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// forbid fails for every package matching pattern (and accepted by only)
// that depends on a package under one of the dirs.
func forbid(t *testing.T, pattern string, only func(string) bool, dirs ...string) {
	t.Helper()
	for pkg, ds := range deps(t, pattern) {
		if only != nil && !only(pkg) {
			continue
		}
		for _, d := range ds {
			for _, dir := range dirs {
				if under(d, dir) || dir == "kong" && strings.Contains(d, "/kong") {
					t.Errorf("%s depends on %s: the layout forbids %s there (docs/architecture.md)", pkg, d, dir)
				}
			}
		}
	}
}

// TestQueueKnowsNoGoalNorObs: the queue (its core, backends, worker) links
// neither the goal journal nor obs's emitter and sinks; only the adapters
// lib/queue/queueobs (events) and lib/queue/queuetrace (spans, with
// lib/obs/tracectx for the TRACEPARENT it hands each run) know obs. The
// one exception is
// lib/obs/redact, a pure filter over values that depends on nothing but
// jsonx and exitcode: the queue redacts the failure reasons it keeps in
// traces and the worker the output tails it keeps, with the same rules as
// every event.
func TestQueueKnowsNoGoalNorObs(t *testing.T) {
	forbid(t, "./lib/queue/...", nil, "lib/goal")
	for pkg, ds := range deps(t, "./lib/queue/...") {
		if under(pkg, "lib/queue/queueobs") || under(pkg, "lib/queue/queuetrace") {
			continue
		}
		for _, d := range ds {
			if under(d, "lib/obs") && !under(d, "lib/obs/redact") {
				t.Errorf("%s depends on %s: the layout forbids lib/obs there, but for lib/obs/redact (docs/architecture.md)", pkg, d)
			}
		}
	}
	forbid(t, "./lib/obs/redact", nil, "lib/obs/adapt", "lib/queue", "lib/goal", "lib/agent", "lib/execx", "lib/release", "lib/workspace")
}

// TestObsKnowsNoDomain: lib/obs (drafts, redaction, envelopes, emitter,
// sinks) depends on no domain package; the adapters live with their
// domains (execx/execobs, queue/queueobs, goal/goalobs).
func TestObsKnowsNoDomain(t *testing.T) {
	forbid(t, "./lib/obs/...", nil, "lib/queue", "lib/goal", "lib/agent", "lib/execx", "lib/release", "lib/workspace")
}

// TestLibrariesKnowNoCLI: no library links kong or a command.
func TestLibrariesKnowNoCLI(t *testing.T) {
	forbid(t, "./lib/...", nil, "kong", "cmd", "internal/cli")
}

// TestTheTestSees: the rules above see real edges (a test that could not
// fail would prove nothing): the worker does depend on the queue, the
// queue's adapter on obs, and artgoal on kong.
func TestTheTestSees(t *testing.T) {
	for _, c := range []struct{ pattern, pkg, dep string }{
		{"./lib/queue/worker", "lib/queue/worker", "lib/queue"},
		{"./lib/queue/queueobs", "lib/queue/queueobs", "lib/obs"},
		{"./cmd/artgoal", "cmd/artgoal", "kong"},
	} {
		found := false
		for _, d := range deps(t, c.pattern)[c.pkg] {
			if d == c.dep || c.dep == "kong" && strings.Contains(d, "/kong") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no dependency on %s seen", c.pkg, c.dep)
		}
	}
}

// binaryForbidden are modules no binary may link: gitleaks (its rules are
// generated into lib/obs/redact/gitleaks_gen.go) and its config loader
// viper, with the HCL, afero, fsnotify and zerolog packages it brings;
// both are generate- and test-time dependencies (docs/deps.md).
var binaryForbidden = []string{"github.com/zricethezav/gitleaks/", "github.com/spf13/viper"}

// TestBinariesLinkNoGitleaks: no command under cmd/ depends on gitleaks
// or viper (go list -deps: what the binary links).
func TestBinariesLinkNoGitleaks(t *testing.T) {
	out := goList(t, "-deps", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", "./cmd/...")
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], module+"cmd/") {
			continue
		}
		for _, d := range f[1:] {
			for _, bad := range binaryForbidden {
				if strings.HasPrefix(d, bad) {
					t.Errorf("%s links %s: gitleaks and viper are generate- and test-time dependencies only (docs/deps.md)", f[0], d)
				}
			}
		}
	}
	// The check sees real edges: the generator links both.
	gen := goList(t, "-f", "{{join .Deps \" \"}}", "./lib/obs/redact/internal/gen")
	for _, bad := range binaryForbidden {
		if !strings.Contains(gen, bad) {
			t.Errorf("the redaction table generator does not depend on %s: the check above proves nothing", bad)
		}
	}
}

func goList(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return string(out)
}
