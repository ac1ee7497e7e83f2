package docstest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tools are the commands the docs use; they are built once for the test.
var tools = []string{"artq", "artexec", "artagent", "artgoal", "artobs", "artrelease"}

var show = flag.Bool("docs.show", false, "log every doc script's whole output")

var (
	repo   string // the repository root
	binDir string // the built tools
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	var err error
	if repo, err = filepath.Abs("../.."); err != nil {
		fmt.Fprintln(os.Stderr, "docstest:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "art-docs-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "docstest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	// Plain (non-race) binaries, as make build gives a user: the examples
	// start many processes, and this test checks the docs, not the code.
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	// artexec-shim too: the tools take every task's supervisor from beside
	// themselves, as make build lays them out for a user.
	// artobs-web too: artobs serve executes it from beside artobs.
	// artexec-cli too: artexec hands it every invocation but a plain run.
	for _, t := range append(slices.Clone(tools), "artexec-shim", "artexec-cli", "artobs-web") {
		args = append(args, "./cmd/"+t)
	}
	for try := 1; ; try++ {
		build := exec.Command("go", args...)
		build.Dir = repo
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := build.CombinedOutput()
		if err == nil {
			break
		}
		if try == 2 {
			fmt.Fprintf(os.Stderr, "docstest: go build: %v\n%s", err, out)
			return 1
		}
	}
	return m.Run()
}

// docs are README.md and docs/*.md, relative to the repository root.
func docs(t *testing.T) []string {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, f := range found {
		out = append(out, filepath.Join("docs", filepath.Base(f)))
	}
	return out
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docTimeout bounds one doc's whole script.
const docTimeout = 4 * time.Minute

// TestRunnable runs each doc's `sh` blocks in order as one bash -e script in
// a fresh directory holding a copy of the repository's testdata/ (the
// examples run from a clone's root), with a fresh HOME so no state of the
// caller's is read or written. A failure names the doc, the block's line
// and the failing command.
func TestRunnable(t *testing.T) {
	lock := lockMachine(t)
	defer lock()
	for _, name := range docs(t) {
		blocks := Blocks(readDoc(t, name))
		var script strings.Builder
		var lineMap []string // script line (0-based) -> "doc:line"
		emit := func(s, where string) {
			for _, l := range strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n") {
				script.WriteString(strings.TrimSuffix(l, "\n") + "\n")
				lineMap = append(lineMap, where)
			}
		}
		// ERR fires for the command that makes bash -e exit; -E carries it into
		// functions and subshells. The script's line number maps back to the doc.
		emit(`set -eE; trap 'echo "docstest-failed $LINENO $BASH_COMMAND" >&3' ERR`, "prelude")
		n := 0
		for _, b := range blocks {
			if !b.Runnable() {
				continue
			}
			n++
			emit(fmt.Sprintf("# block %s:%d", name, b.Line), fmt.Sprintf("%s:%d", name, b.Line))
			for i, l := range strings.SplitAfter(strings.TrimSuffix(b.Text, "\n"), "\n") {
				emit(l, fmt.Sprintf("%s:%d (block at line %d)", name, b.Line+i, b.Line))
			}
		}
		if n == 0 {
			continue
		}
		t.Run(strings.TrimSuffix(filepath.Base(name), ".md"), func(t *testing.T) {
			runScript(t, name, script.String(), lineMap)
		})
	}
}

func runScript(t *testing.T, name, script string, lineMap []string) {
	work := t.TempDir()
	dir := filepath.Join(work, "run")
	home := filepath.Join(work, "home")
	for _, d := range []string{dir, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("cp", "-R", filepath.Join(repo, "testdata"), dir).CombinedOutput(); err != nil {
		t.Fatalf("copy testdata: %v\n%s", err, out)
	}
	goEnv := map[string]string{}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS", "GONOSUMDB", "GOSUMDB"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		goEnv[k] = strings.TrimSpace(string(out))
	}
	env := []string{
		"PATH=" + binDir + string(filepath.ListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		"TERM=dumb",
		"LANG=C.UTF-8",
		"GOTOOLCHAIN=local",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=docs", "GIT_AUTHOR_EMAIL=docs@example.com",
		"GIT_COMMITTER_NAME=docs", "GIT_COMMITTER_EMAIL=docs@example.com",
	}
	for k, v := range goEnv {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), docTimeout)
	defer cancel()
	scriptPath := filepath.Join(work, "script.sh")
	if err := os.WriteFile(scriptPath, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	failR, failW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", "-e", scriptPath)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.ExtraFiles = []*os.File{failW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err = cmd.Start()
	failW.Close()
	if err != nil {
		t.Fatal(err)
	}
	var fail bytes.Buffer
	done := make(chan struct{})
	go func() { _, _ = fail.ReadFrom(failR); close(done) }()
	err = cmd.Wait()
	// Whatever a block left running in the background (a server after a
	// failure) goes with the process group.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
	failR.Close()
	if testing.Verbose() {
		t.Logf("%s: %s", name, time.Since(start).Round(time.Millisecond))
	}
	if *show {
		t.Logf("--- output ---\n%s", out.Bytes())
	}
	if err == nil {
		return
	}
	where, what := "", ""
	if f := strings.Fields(fail.String()); len(f) >= 2 && f[0] == "docstest-failed" {
		if n, e := strconv.Atoi(f[1]); e == nil && n-1 >= 0 && n-1 < len(lineMap) {
			where = lineMap[n-1]
		}
		what = strings.TrimSpace(strings.TrimPrefix(strings.SplitN(fail.String(), "\n", 2)[0], "docstest-failed "+f[1]))
	}
	if ctx.Err() != nil {
		what = fmt.Sprintf("timed out after %s", docTimeout)
	}
	if where == "" {
		where = name
	}
	t.Fatalf("%s: %s: %v\n--- output (last 4 KiB) ---\n%s", where, what, err, tail(out.Bytes(), 4096))
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// lockMachine serialises the runnable docs across concurrent test runs on
// this machine: the NATS example listens on a fixed port.
func lockMachine(t *testing.T) func() {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "art-docstest.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return func() { f.Close() }
}

// TestNoRunFlags checks every art* command of an `sh norun` block against
// its tool's --help: each flag it uses must be listed there.
func TestNoRunFlags(t *testing.T) {
	helps := map[string]string{}
	help := func(tool string, path ...string) string {
		key := tool + " " + strings.Join(path, " ")
		if h, ok := helps[key]; ok {
			return h
		}
		args := append(append([]string{}, path...), "--help")
		out, err := exec.Command(filepath.Join(binDir, tool), args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
		}
		helps[key] = string(out)
		return string(out)
	}
	checked := 0
	for _, name := range docs(t) {
		for _, b := range Blocks(readDoc(t, name)) {
			if !b.NoRun() {
				continue
			}
			for _, c := range Commands(b.Text, tools) {
				path := subcommand(help(c.Tool), c.Words)
				h := help(c.Tool, path...)
				for _, f := range Flags(c.Words) {
					checked++
					if !hasFlag(h, f) {
						t.Errorf("%s:%d: %s %s: flag %s is not in '%s --help'",
							name, b.Line+c.Line-1, c.Tool, strings.Join(path, " "), f,
							strings.Join(append([]string{c.Tool}, path...), " "))
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no flags checked: the norun blocks were not found")
	}
}

// TestHelpExamples holds every tool's --help examples to the same rule:
// each art* command in a command's "Example:" section uses only flags its
// tool's --help lists.
func TestHelpExamples(t *testing.T) {
	help := func(tool string, path ...string) string {
		out, err := exec.Command(filepath.Join(binDir, tool), append(path, "--help")...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s --help: %v\n%s", tool, strings.Join(path, " "), err, out)
		}
		return string(out)
	}
	checked := 0
	for _, tool := range tools {
		root := help(tool)
		for cmd := range commandsOf(root) {
			ex := examples(help(tool, cmd))
			for _, c := range Commands(ex, tools) {
				path := subcommand(help(c.Tool), c.Words)
				h := help(c.Tool, path...)
				for _, f := range Flags(c.Words) {
					checked++
					if !hasFlag(h, f) {
						t.Errorf("'%s %s --help' example: %s %s: flag %s is not in '%s --help'",
							tool, cmd, c.Tool, strings.Join(path, " "), f, strings.Join(append([]string{c.Tool}, path...), " "))
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no example flags checked")
	}
}

// examples is the indented text after "Example:" in a help text.
func examples(help string) string {
	_, rest, ok := strings.Cut(help, "Example:\n")
	if !ok {
		return ""
	}
	var b strings.Builder
	for _, l := range strings.Split(rest, "\n") {
		if l != "" && !strings.HasPrefix(l, " ") {
			break
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// subcommand is the leading command words (as listed under "Commands:" in
// the tool's help) among a command line's words.
func subcommand(rootHelp string, words []string) []string {
	cmds := commandsOf(rootHelp)
	for _, w := range words {
		if w == "--" {
			break
		}
		if cmds[w] {
			return []string{w}
		}
	}
	return nil
}

var commandLine = regexp.MustCompile(`^  ([a-z][a-z-]*)(\s|$)`)

func commandsOf(help string) map[string]bool {
	out := map[string]bool{}
	in := false
	for _, l := range strings.Split(help, "\n") {
		switch {
		case strings.HasPrefix(l, "Commands:"):
			in = true
		case in && l != "" && !strings.HasPrefix(l, " "):
			in = false
		case in:
			if m := commandLine.FindStringSubmatch(l); m != nil {
				out[m[1]] = true
			}
		}
	}
	return out
}

// hasFlag reports whether a --help text lists flag ("--name" or "-x").
func hasFlag(help, flag string) bool {
	if strings.HasPrefix(flag, "--") {
		return regexp.MustCompile(`(^|[\s,])` + regexp.QuoteMeta(flag) + `([=\s,]|$)`).MatchString(help)
	}
	return regexp.MustCompile(`(^|\s)` + regexp.QuoteMeta(flag) + `,`).MatchString(help)
}

// outside matches what a user with only this repository cannot follow: the
// design contract kept outside the repository, a path out of it, or an
// issue number.
var outside = []*regexp.Regexp{
	regexp.MustCompile(`DESIGN\.md`),
	regexp.MustCompile(`\.\./shared|\]\(\.\./\.\./`),
	regexp.MustCompile(`(?i)\bissues?\s*#?\d+`),
	regexp.MustCompile(`(^|\s)#\d+\b`),
	regexp.MustCompile(`(?i)not built yet`),
	regexp.MustCompile(`^(<<<<<<<|>>>>>>>) `), // a merge conflict left in
}

// TestSelfContained: README.md and docs/ are written for a user who has
// only this repository, so they point at nothing outside it.
func TestSelfContained(t *testing.T) {
	for _, name := range docs(t) {
		for i, l := range strings.Split(readDoc(t, name), "\n") {
			for _, re := range outside {
				if m := re.FindString(l); m != "" {
					t.Errorf("%s:%d: %q points outside the repository (or is stale): %s", name, i+1, strings.TrimSpace(m), strings.TrimSpace(l))
				}
			}
		}
	}
}

// commentRefs matches, in a code comment, a document a reader of this
// repository does not have: the design contract kept outside it, a path out
// of it, or an issue number. Comments cite docs/architecture.md or the file
// that holds the rule instead.
var commentRefs = []*regexp.Regexp{
	regexp.MustCompile(`DESIGN\.md`),
	regexp.MustCompile(`\.\./shared`),
	regexp.MustCompile(`(?i)\bissues?\s*#?\d+`),
}

// TestCommentsSelfContained: comments in Go sources, scripts and the
// Makefile cite only what this repository holds.
func TestCommentsSelfContained(t *testing.T) {
	err := filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != repo && (strings.HasPrefix(n, ".") && n != ".ci" || n == "testdata" || n == "bin" || n == "dist") {
				return filepath.SkipDir
			}
			return nil
		}
		var marker string
		switch {
		case strings.HasSuffix(p, ".go"):
			marker = "//"
		case strings.HasSuffix(p, ".sh"), d.Name() == "Makefile", d.Name() == "run", strings.HasSuffix(p, ".awk"):
			marker = "#"
		default:
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repo, p)
		for i, l := range strings.Split(string(b), "\n") {
			k := strings.Index(l, marker)
			if k < 0 {
				continue
			}
			for _, re := range commentRefs {
				if m := re.FindString(l[k:]); m != "" {
					t.Errorf("%s:%d: comment cites %q, which is not in this repository: %s", rel, i+1, m, strings.TrimSpace(l))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLinks: every relative Markdown link of the docs names a file that
// exists in the repository.
func TestLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	var bad []string
	for _, name := range docs(t) {
		for i, l := range strings.Split(readDoc(t, name), "\n") {
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				p := filepath.Join(repo, filepath.Dir(name), target)
				rel, err := filepath.Rel(repo, p)
				if err != nil || strings.HasPrefix(rel, "..") {
					bad = append(bad, fmt.Sprintf("%s:%d: link %s leaves the repository", name, i+1, target))
					continue
				}
				if _, err := os.Stat(p); err != nil {
					bad = append(bad, fmt.Sprintf("%s:%d: link %s: no such file", name, i+1, target))
				}
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}
