package release

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/art-runtime/art/lib/exitcode"
)

// goPassThrough are the caller's go settings a release build keeps: where
// modules and build results are cached and how modules are fetched. None
// of them reaches the binary's bytes (-trimpath hides the cache paths); all
// others — GOFLAGS, GOEXPERIMENT, GODEBUG, CC, CGO_CFLAGS, a go env file —
// are dropped, so no user setting leaks into a release.
var goPassThrough = []string{"GOMODCACHE", "GOCACHE", "GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE", "GOTOOLCHAIN"}

// goTool is the go command a release build runs, with the caller's
// pass-through settings.
type goTool struct {
	path string
	keep map[string]string
}

// findGo locates go on PATH and reads the caller's pass-through settings
// (go env, so a value set with go env -w counts too).
func findGo(ctx context.Context) (*goTool, error) {
	p, err := exec.LookPath("go")
	if err != nil {
		return nil, exitcode.WithHint(exitcode.Errorf(exitcode.ProgramNotFound, "go: not found on PATH: the contract declares binaries"),
			"install the Go toolchain the contract pins, or remove \"binaries\" from the contract")
	}
	// The caller's GOFLAGS and GOEXPERIMENT are not the release's: they
	// must not even stop go env from answering.
	cmd := exec.CommandContext(ctx, p, append([]string{"env", "-json"}, goPassThrough...)...)
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOEXPERIMENT=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w: %s", err, firstLine(stderr.String()))
	}
	keep := map[string]string{}
	if err := json.Unmarshal(out, &keep); err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	return &goTool{path: p, keep: keep}, nil
}

// buildEnv is the whole environment of a go command run for a release: a
// fresh HOME, GOPATH and TMPDIR under work, no go env file (GOENV=off), no
// workspace (GOWORK=off: the module builds as published), -mod=readonly
// (or -mod=vendor when the module vendors), cgo off unless asked, a fixed
// locale and zone, the target platform.
func (g *goTool) buildEnv(work, modFlag string, p Platform, cgo bool) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(work, "home"),
		"GOPATH=" + filepath.Join(work, "gopath"),
		"TMPDIR=" + filepath.Join(work, "tmp"),
		"GOENV=off",
		"GOWORK=off",
		"GOFLAGS=" + modFlag,
		"LC_ALL=C",
		"TZ=UTC",
		"GOOS=" + p.OS,
		"GOARCH=" + p.Arch,
		"CGO_ENABLED=0",
	}
	if cgo {
		env[len(env)-1] = "CGO_ENABLED=1"
	}
	if v, ok := p.variantEnv(); ok && p.Variant != "" {
		env = append(env, v+"="+p.Variant)
	}
	for _, k := range goPassThrough {
		if v := g.keep[k]; v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// version is the toolchain the go command runs in dir under env (after
// any GOTOOLCHAIN switch): "go1.26.0".
func (g *goTool) version(ctx context.Context, dir string, env []string) (string, error) {
	cmd := exec.CommandContext(ctx, g.path, "env", "GOVERSION")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w: %s", err, firstLine(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// checkToolchain refuses a go command other than the pinned one.
func checkToolchain(pin, got, gotoolchain string) error {
	if pin == "" || pin == got {
		return nil
	}
	if gotoolchain == "" {
		gotoolchain = "unset"
	}
	return exitcode.WithHint(exitcode.Errorf(exitcode.Refused, "contract.toolchain: %s is pinned, but the go command here runs %s (GOTOOLCHAIN=%s)",
		pin, got, gotoolchain),
		"run with GOTOOLCHAIN=%s (the go command fetches that toolchain) or put %s first on PATH", pin, pin)
}

// buildJob is one binary for one platform.
type buildJob struct {
	Bin      Binary
	Platform Platform
	// Out is the file the binary is written to.
	Out string
}

// buildResult is what a set of builds ran with.
type buildResult struct {
	GoVersion string
}

// goBuild builds every job from the source tree at src (the release's own
// archive, extracted), with work as scratch space. Jobs of one module,
// platform and flag set run as one go build (the go command shares the
// loading and compiling of their common packages); the commands are
// deterministic: -trimpath, -buildvcs=false, -ldflags with -buildid= last.
func goBuild(ctx context.Context, g *goTool, src, work, pin string, id *Identity, jobs []buildJob) (buildResult, error) {
	var res buildResult
	for _, d := range []string{"home", "gopath", "tmp", "out"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
			return res, err
		}
	}
	type groupKey struct {
		modRoot, platform, ldflags, tags string
		cgo                              bool
	}
	type group struct {
		key  groupKey
		jobs []buildJob
	}
	groups := map[groupKey]*group{}
	var order []groupKey
	for _, j := range jobs {
		modRoot, err := moduleRootOf(src, j.Bin.Main)
		if err != nil {
			return res, err
		}
		k := groupKey{modRoot, j.Platform.String(), strings.Join(ldflagsFor(j.Bin, id), "\x00"), strings.Join(j.Bin.Tags, ","), j.Bin.Cgo}
		if groups[k] == nil {
			groups[k] = &group{key: k}
			order = append(order, k)
		}
		groups[k].jobs = append(groups[k].jobs, j)
	}
	for n, k := range order {
		gr := groups[k]
		modFlag := "-mod=readonly"
		if _, err := os.Stat(filepath.Join(src, filepath.FromSlash(k.modRoot), "vendor", "modules.txt")); err == nil {
			modFlag = "-mod=vendor"
		}
		env := g.buildEnv(work, modFlag, gr.jobs[0].Platform, k.cgo)
		dir := filepath.Join(src, filepath.FromSlash(k.modRoot))
		if res.GoVersion == "" {
			v, err := g.version(ctx, dir, env)
			if err != nil {
				return res, err
			}
			if err := checkToolchain(pin, v, g.keep["GOTOOLCHAIN"]); err != nil {
				return res, err
			}
			res.GoVersion = v
		}
		// One go build per group, into a directory of its own: -o DIR/
		// names each binary after its main package, so mains with one
		// base name go to separate groups of one.
		for _, part := range splitByBase(gr.jobs) {
			outDir := filepath.Join(work, "out", fmt.Sprintf("%d", n))
			if err := os.MkdirAll(outDir, 0o755); err != nil {
				return res, err
			}
			args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=" + strings.Join(append(ldflagsFor(part[0].Bin, id), "-buildid="), " ")}
			if k.tags != "" {
				args = append(args, "-tags="+k.tags)
			}
			var pkgs []string
			for _, j := range part {
				pkgs = append(pkgs, "./"+strings.TrimPrefix(relMain(k.modRoot, j.Bin.Main), "./"))
			}
			out := outDir + string(filepath.Separator)
			if len(part) == 1 {
				out = part[0].Out
			}
			args = append(args, "-o", out)
			args = append(args, pkgs...)
			cmd := exec.CommandContext(ctx, g.path, args...)
			cmd.Dir, cmd.Env = dir, env
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stderr, &stderr
			if err := cmd.Run(); err != nil {
				if ctx.Err() != nil {
					return res, context.Cause(ctx)
				}
				var names []string
				for _, j := range part {
					names = append(names, j.Bin.Name)
				}
				return res, exitcode.Errorf(exitcode.Failed, "build %s for %s: go %s: %v: %s", strings.Join(names, ", "), k.platform,
					strings.Join(args, " "), err, strings.TrimSpace(lastLines(stderr.String(), 8)))
			}
			if len(part) > 1 {
				for _, j := range part {
					built := filepath.Join(outDir, path.Base(j.Bin.Main)+j.Platform.Exe())
					if err := os.Rename(built, j.Out); err != nil {
						return res, err
					}
				}
			}
		}
	}
	return res, nil
}

// splitByBase keeps jobs whose mains share a directory name (or are the
// module root) apart, so -o DIR/ cannot write two into one file.
func splitByBase(jobs []buildJob) [][]buildJob {
	var together []buildJob
	var alone [][]buildJob
	seen := map[string]bool{}
	for _, j := range jobs {
		b := path.Base(j.Bin.Main)
		if b == "." || seen[b] {
			alone = append(alone, []buildJob{j})
			continue
		}
		seen[b] = true
		together = append(together, j)
	}
	if len(together) > 0 {
		alone = append([][]buildJob{together}, alone...)
	}
	return alone
}

// moduleRootOf is the directory (slash path relative to src, "" for the
// root) of the go.mod nearest above main.
func moduleRootOf(src, main string) (string, error) {
	d := path.Clean(strings.TrimPrefix(main, "./"))
	for {
		if d == "." {
			d = ""
		}
		if _, err := os.Stat(filepath.Join(src, filepath.FromSlash(d), "go.mod")); err == nil {
			return d, nil
		}
		if d == "" {
			return "", exitcode.Errorf(exitcode.Usage, "binary main %s: no go.mod in its directory or above it in the tree", main)
		}
		d = path.Dir(d)
	}
}

// relMain is main relative to the module root.
func relMain(modRoot, main string) string {
	m := path.Clean(strings.TrimPrefix(main, "./"))
	if modRoot == "" {
		return m
	}
	r := strings.TrimPrefix(strings.TrimPrefix(m, modRoot), "/")
	if r == "" {
		return "."
	}
	return r
}

// ldflagsFor substitutes the release's version, commit and tag.
func ldflagsFor(b Binary, id *Identity) []string {
	rep := strings.NewReplacer("{{.Version}}", id.Version, "{{.Commit}}", id.Commit.ID, "{{.Tag}}", id.Tag)
	out := make([]string, len(b.Ldflags))
	for i, f := range b.Ldflags {
		out[i] = rep.Replace(f)
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// binaryJobs lists the contract's binaries × platforms, sorted by platform
// then name, with their output files under dir.
func binaryJobs(c *Contract, dir string) []buildJob {
	var jobs []buildJob
	for _, b := range c.Binaries {
		for _, ps := range b.Platforms {
			p, _ := ParsePlatform(ps)
			jobs = append(jobs, buildJob{Bin: b, Platform: p, Out: filepath.Join(dir, p.Suffix(), b.Name+p.Exe())})
		}
	}
	sort.Slice(jobs, func(i, j int) bool {
		if a, b := jobs[i].Platform.String(), jobs[j].Platform.String(); a != b {
			return a < b
		}
		return jobs[i].Bin.Name < jobs[j].Bin.Name
	})
	return jobs
}
