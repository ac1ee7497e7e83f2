package cli

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
)

type echoCmd struct {
	Fail string `help:"Fail with this message."`
	Code int    `help:"Exit code of the failure."`
	Word string `arg:"" optional:""`
}

func (e *echoCmd) Run(ctx context.Context, io IO, g *Globals) error {
	if e.Fail != "" {
		return exitcode.Errorf(e.Code, "%s", e.Fail)
	}
	if e.Code != 0 {
		return exitcode.Quiet(e.Code)
	}
	_, err := io.Out.Write([]byte(e.Word + " " + g.Output + "\n"))
	return err
}

type testCLI struct {
	Globals
	Echo       echoCmd       `cmd:"" help:"Echo a word."`
	Completion CompletionCmd `cmd:"" help:"Print a shell completion script."`
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	g := &testCLI{}
	code = Run(context.Background(), "arttest", "A test tool.", g, args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    string
		wantStderr string
	}{
		{"success", []string{"echo", "hi"}, 0, "hi auto\n", ""},
		{"global flag", []string{"-o", "json", "echo", "hi"}, 0, "hi json\n", ""},
		{"unknown flag is usage, not kong's 80", []string{"echo", "--nope"}, exitcode.Usage, "", "arttest: error: unknown flag --nope"},
		{"unknown command", []string{"frobnicate"}, exitcode.Usage, "", "arttest: hint: run 'arttest frobnicate --help'"},
		{"bad enum", []string{"-o", "yaml", "echo"}, exitcode.Usage, "", "arttest: error:"},
		{"coded error", []string{"echo", "--fail", "stale revision", "--code", "3"}, exitcode.Conflict, "", "arttest: error: stale revision\n"},
		{"quiet exit prints nothing", []string{"echo", "--code", "7"}, 7, "", ""},
		{"help exits 0", []string{"--help"}, 0, "Usage: arttest", ""},
		{"version exits 0", []string{"--version"}, 0, "arttest ", ""},
	}
	for _, tt := range tests {
		code, out, errs := run(t, tt.args...)
		if code != tt.wantCode {
			t.Errorf("%s: exit %d; want %d (stderr %q)", tt.name, code, tt.wantCode, errs)
		}
		if !strings.Contains(out, tt.wantOut) {
			t.Errorf("%s: stdout %q; want it to contain %q", tt.name, out, tt.wantOut)
		}
		if tt.wantStderr == "" && errs != "" {
			t.Errorf("%s: stderr %q; want empty", tt.name, errs)
		}
		if !strings.Contains(errs, tt.wantStderr) {
			t.Errorf("%s: stderr %q; want it to contain %q", tt.name, errs, tt.wantStderr)
		}
		if strings.Count(strings.TrimSpace(errs), "\n") > 1 {
			t.Errorf("%s: stderr has more than an error and a hint line: %q", tt.name, errs)
		}
	}
}

func TestSignalErrorCode(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&SignalError{})
	var se *SignalError
	if !errors.As(context.Cause(ctx), &se) || exitcode.Of(context.Cause(ctx)) != exitcode.Cancelled {
		t.Errorf("signal cause exit code = %d; want 130", exitcode.Of(context.Cause(ctx)))
	}
}

func TestHome(t *testing.T) {
	t.Setenv("ART_HOME", "")
	t.Setenv("XDG_STATE_HOME", "/x")
	if h, _ := (&Globals{}).Home(); h != "/x/art" {
		t.Errorf("Home with XDG_STATE_HOME = %q; want /x/art", h)
	}
	t.Setenv("ART_HOME", "/a")
	if h, _ := (&Globals{}).Home(); h != "/a" {
		t.Errorf("Home with ART_HOME = %q; want /a", h)
	}
	if h, _ := (&Globals{Dir: "/d"}).Home(); h != "/d" {
		t.Errorf("Home with --dir = %q; want /d", h)
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, out, errs := run(t, "completion", shell)
		if code != 0 || errs != "" {
			t.Fatalf("completion %s: exit %d, stderr %q", shell, code, errs)
		}
		for _, want := range []string{"echo", "fail", "completion"} {
			if !strings.Contains(out, want) {
				t.Errorf("completion %s lacks %q:\n%s", shell, want, out)
			}
		}
	}
	if code, _, _ := run(t, "completion", "tcsh"); code != exitcode.Usage {
		t.Errorf("completion tcsh: exit %d; want 2", code)
	}
}

// TestBashCompletionRuns sources the generated script in a real bash and asks
// it to complete, as a user's shell would.
func TestBashCompletionRuns(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	_, out, _ := run(t, "completion", "bash")
	cases := []struct {
		words []string
		want  string
	}{
		{[]string{"arttest", "ec"}, "echo"},
		{[]string{"arttest", "echo", "--fa"}, "--fail"},
		{[]string{"arttest", "echo", "--ou"}, "--output"},
	}
	for _, c := range cases {
		prog := out + "\nCOMP_WORDS=(" + strings.Join(c.words, " ") + ")\nCOMP_CWORD=" +
			strconv.Itoa(len(c.words)-1) + "\n_arttest_complete\necho \"${COMPREPLY[*]}\"\n"
		got, err := exec.Command(bash, "--norc", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, got)
		}
		if strings.TrimSpace(string(got)) != c.want {
			t.Errorf("complete %v = %q; want %q", c.words, strings.TrimSpace(string(got)), c.want)
		}
	}
}
