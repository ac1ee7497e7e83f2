package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/internal/systest"
)

// maxRunInits bounds the packages `artexec run` initialises (GODEBUG
// inittrace lines): every one of them is paid at each task start. The
// artexec binary is the run command and lib/execx alone, 29 packages
// (network allow's proxy is artexec-cli's); one more dependency that drags
// in a command-line framework, a configuration library, a networking
// stack or a queue client shows here.
const maxRunInits = 36

// heavy are packages `artexec run` must never initialise: it uses none of
// them (the grammar, --events, the redactor and network allow are
// artexec-cli's).
var heavy = []string{
	"net", "net/netip", "net/http", "github.com/nats-io/", "github.com/spf13/viper", "github.com/alecthomas/kong",
	"github.com/art-runtime/art/lib/obs", "github.com/art-runtime/art/internal/cli",
}

// buildArtexec builds artexec, and artexec-cli beside it when cli is set
// (as make build lays them out), and returns the artexec binary's path.
func buildArtexec(t *testing.T, cli bool) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds artexec")
	}
	bin := systest.GoBuild(t, "github.com/art-runtime/art/cmd/artexec")
	if cli {
		c := systest.GoBuild(t, "github.com/art-runtime/art/cmd/artexec-cli")
		if err := os.Link(c, filepath.Join(filepath.Dir(bin), "artexec-cli")); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// TestRunInitCost builds artexec, runs `artexec run -- true` with
// GODEBUG=inittrace=1 and counts the packages it initialises.
func TestRunInitCost(t *testing.T) {
	bin := buildArtexec(t, false)
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "--workspace", dir, "--allow", "true", "--", "true")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("artexec run: %v\n%s\n%s", err, out, stderr.String())
	}
	var inits []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			inits = append(inits, strings.ReplaceAll(f[1], "%2e", "."))
		}
	}
	if len(inits) == 0 {
		t.Fatalf("no inittrace lines on stderr:\n%s", stderr.String())
	}
	for _, p := range inits {
		for _, h := range heavy {
			if strings.HasPrefix(p, h) {
				t.Errorf("artexec run initialises %s", p)
			}
		}
	}
	t.Logf("artexec run initialises %d packages (held to %d)", len(inits), maxRunInits)
	if len(inits) > maxRunInits {
		t.Errorf("artexec run initialises %d packages; want at most %d:\n%s", len(inits), maxRunInits, strings.Join(inits, " "))
	}
}
