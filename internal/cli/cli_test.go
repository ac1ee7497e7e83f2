package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
)

type echoCmd struct {
	Fail  string   `help:"Fail with this message."`
	Code  int      `help:"Exit code of the failure."`
	Word  string   `arg:"" optional:""`
	Allow []string `names:"" help:"A name (repeatable)."`
	Tag   []string `help:"A free value (repeatable)."`
}

func (e *echoCmd) Run(ctx context.Context, io IO, g *Globals) error {
	if e.Fail != "" {
		return exitcode.Errorf(e.Code, "%s", e.Fail)
	}
	if e.Code != 0 {
		return exitcode.Quiet(e.Code)
	}
	line := e.Word + " " + g.Output
	if len(e.Allow)+len(e.Tag) > 0 {
		line += fmt.Sprintf(" %q %q", e.Allow, e.Tag)
	}
	_, err := io.Out.Write([]byte(line + "\n"))
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
		{"unknown command hints the tool's help", []string{"frobnicate"}, exitcode.Usage, "", "arttest: hint: run 'arttest --help' for usage"},
		{"typo hints the closest command", []string{"ecoh", "hi"}, exitcode.Usage, "", "arttest: hint: run 'arttest echo --help' for usage"},
		{"typo after a global flag's value", []string{"--dir", "/x", "ehco"}, exitcode.Usage, "", "arttest: hint: run 'arttest echo --help' for usage"},
		{"bad flag hints its command", []string{"echo", "--nope"}, exitcode.Usage, "", "arttest: hint: run 'arttest echo --help' for usage"},
		{"a names flag refuses a comma list", []string{"echo", "--allow", "a,b"}, exitcode.Usage, "", "arttest: hint: repeat the flag, one name each: --allow a --allow b"},
		{"repeated names", []string{"echo", "--allow", "a", "--allow=b"}, 0, `["a" "b"] []`, ""},
		{"no slice flag splits at commas", []string{"echo", "--tag", "x,y"}, 0, `[] ["x,y"]`, ""},
		{"help as a command", []string{"help", "echo"}, 0, "Usage: arttest echo", ""},
		{"help alone", []string{"help"}, 0, "Usage: arttest <command>", ""},
		{"help of a typo", []string{"help", "ecoh"}, exitcode.Usage, "", "arttest: hint: run 'arttest echo --help' for usage"},
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
		{[]string{"arttest", "-o", "''"}, "auto json text"},
		{[]string{"arttest", "echo", "--output", "j"}, "json"},
		{[]string{"arttest", "--dir", "''"}, ""},
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

func TestVersionOf(t *testing.T) {
	set := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	tests := []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: set("vcs.revision", "0bca10c4f00dfeedface", "vcs.modified", "true")}, "dev (0bca10c4f00d, modified)"},
		{debug.BuildInfo{Settings: set("vcs.revision", "abc")}, "dev (abc)"},
	}
	for _, tt := range tests {
		if got := versionOf(&tt.bi); got != tt.want {
			t.Errorf("versionOf(%+v) = %q; want %q", tt.bi.Main, got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"stauts", "status", 1}, {"status", "status", 0}, {"", "ab", 2}, {"kitten", "sitting", 3}} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d; want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// closedPipe is a stdout whose reader left: every write fails with EPIPE,
// as os.Stdout's does once SIGPIPE is caught (artq help status | head -1).
type closedPipe struct{}

func (closedPipe) Write([]byte) (int, error) {
	return 0, &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
}

// TestHelpToClosedPipe: help, usage and --version written to a reader
// that left exit 0 with nothing on stderr, like every command's output.
func TestHelpToClosedPipe(t *testing.T) {
	for _, args := range [][]string{
		{"help", "echo"}, {"help"}, {"echo", "--help"}, {"--help"}, {"--version"}, {"completion", "bash"},
	} {
		var errb bytes.Buffer
		code := Run(context.Background(), "arttest", "A test tool.", &testCLI{}, args, IO{In: strings.NewReader(""), Out: closedPipe{}, Err: &errb})
		if code != 0 || errb.Len() != 0 {
			t.Errorf("%v to a closed pipe: exit %d, stderr %q; want 0 and nothing", args, code, errb.String())
		}
	}
}
