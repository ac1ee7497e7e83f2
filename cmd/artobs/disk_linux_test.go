package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/internal/systest"
)

// TestUnwritable puts a JSONL sink on a tmpfs that is full (every page
// taken by ballast) or read-only, and proves that emit and deliver, with
// and without --sync, fail with exit 125 and an error line naming the sink
// and the cause; that the file is byte-for-byte what it was (not even half
// a record appended, which a reader would see as a torn tail); that verify
// and tail still read it; and that the same input is delivered once space
// returns or the filesystem is writable again, into a file that verifies
// clean. Root only (it mounts); skipped otherwise.
func TestUnwritable(t *testing.T) {
	for _, f := range systest.Faults {
		t.Run(f.Name, func(t *testing.T) { testUnwritable(t, f) })
	}
}

func testUnwritable(t *testing.T, fault systest.Fault) {
	m := systest.MountTmpfs(t, 256<<10)
	dir := m.Path("obs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	sink := filepath.Join(dir, "events.jsonl")
	artobs := func(stdin []byte, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command("artobs", args...) // installed by testscript.Main
		cmd.Env = append(os.Environ(), "GORACE="+systest.NoExitSleep())
		cmd.Stdin = bytes.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
	must := func(stdin []byte, args ...string) string {
		t.Helper()
		code, out, errs := artobs(stdin, args...)
		if code != 0 {
			t.Fatalf("artobs %s: exit %d: %s", strings.Join(args, " "), code, errs)
		}
		return out
	}
	// Drafts of ~3 KiB each, so a batch spans several pages and a full
	// disk can cut one in the middle.
	drafts := func(from, to int) []byte {
		var b bytes.Buffer
		for i := from; i <= to; i++ {
			fmt.Fprintf(&b, `{"apiVersion":"art/v1alpha1","kind":"Draft","subject":"run/1","type":"step","time":"2026-01-02T03:04:%02d.5Z","attrs":{"n":%d,"note":%q}}`+"\n",
				i%60, i, strings.Repeat("x", 3000))
		}
		return b.Bytes()
	}
	must(drafts(1, 5), "emit", "--sink", "jsonl:"+sink, "--sync")
	more := drafts(6, 40)
	// What the sink would hold had nothing gone wrong (emit into a copy of
	// it, off the tmpfs), and those 35 events as envelopes for deliver.
	// The drafts carry their time, so the same drafts make the same ids.
	want := filepath.Join(t.TempDir(), "want.jsonl")
	data, err := os.ReadFile(sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, data, 0o600); err != nil {
		t.Fatal(err)
	}
	envelopes := []byte(must(more, "emit", "--sink", "jsonl:"+want, "--sink", "stdout"))
	before := systest.Tree(t, dir)

	fault.Break(m)
	for _, args := range [][]string{
		{"emit", "--sink", "jsonl:" + sink, "--sync"},
		{"emit", "--sink", "jsonl:" + sink},
		{"deliver", "--sink", "jsonl:" + sink, "--sync"},
	} {
		in := more
		if args[0] == "deliver" {
			in = envelopes
		}
		code, _, errs := artobs(in, args...)
		first, rest, _ := strings.Cut(errs, "\n")
		if code != 125 || !strings.HasPrefix(first, "artobs: error: ") || !strings.Contains(first, sink) ||
			!strings.Contains(first, fault.Cause) || !onlyHints(rest) {
			t.Errorf("artobs %s: exit %d, stderr %q; want 125 and one error line naming %s and %q (hints may follow)",
				strings.Join(args, " "), code, errs, sink, fault.Cause)
		}
		systest.SameTree(t, "artobs "+strings.Join(args, " "), dir, before)
	}
	if out := must(nil, "verify", sink); !strings.Contains(out, `"ok":true`) || !strings.Contains(out, `"records":5`) {
		t.Errorf("verify of the untouched sink: %s", out)
	}
	if out := must(nil, "tail", "-n", "1", sink); !strings.Contains(out, `"n":5`) {
		t.Errorf("tail of the untouched sink: %s", out)
	}

	// Once writable, the same input goes in, once: the file is exactly
	// what it would have been had nothing gone wrong.
	fault.Mend(m)
	must(more, "emit", "--sink", "jsonl:"+sink, "--sync")
	must(envelopes, "deliver", "--sink", "jsonl:"+sink, "--sync") // the same events: nothing new
	if out := must(nil, "verify", sink); !strings.Contains(out, `"ok":true`) || !strings.Contains(out, `"records":40`) {
		t.Errorf("verify once writable again: %s; want 40 records, clean", out)
	}
	got, _ := os.ReadFile(sink)
	if wantData, _ := os.ReadFile(want); !bytes.Equal(got, wantData) {
		t.Errorf("the sink after recovery (%d bytes) differs from one that never failed (%d bytes)", len(got), len(wantData))
	}
}

// onlyHints: what follows the error line on stderr is hint lines, if
// anything (a second error, or a note about recovering a torn record, is
// not).
func onlyHints(rest string) bool {
	for _, l := range strings.Split(strings.TrimSuffix(rest, "\n"), "\n") {
		if l != "" && !strings.HasPrefix(l, "artobs: hint: ") {
			return false
		}
	}
	return true
}
