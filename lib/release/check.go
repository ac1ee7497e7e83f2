package release

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// CheckReport is the outcome of Check.
type CheckReport struct {
	Name         string     `json:"name"`
	Version      string     `json:"version"`
	Commit       string     `json:"commit"`
	Reproducible bool       `json:"reproducible"`
	Artifacts    []Artifact `json:"artifacts"`
	Differ       []string   `json:"differ"`
}

// CheckOptions says what to check.
type CheckOptions struct {
	Repo         string
	Ref          string // default HEAD
	ContractFile string
	Progress     func(format string, args ...any)
}

// Check is the read-only validation for pull requests and main: it decodes
// the contract at the ref, builds the release twice — each with its own
// cat-file process, into its own temporary directory — requires the two to
// be byte-identical, and verifies the first. It writes nothing but those
// temporary directories, which it removes.
func Check(ctx context.Context, o CheckOptions) (*CheckReport, error) {
	if o.Ref == "" {
		o.Ref = "HEAD"
	}
	rep := &CheckReport{Differ: []string{}}
	var dirs [2]string
	for i := range dirs {
		dir, err := os.MkdirTemp("", "artrelease-check-")
		if err != nil {
			return rep, err
		}
		defer os.RemoveAll(dir)
		dirs[i] = dir
		m, err := buildOnce(ctx, o, dir)
		if ctx.Err() != nil {
			return rep, context.Cause(ctx)
		}
		if err != nil {
			return rep, err
		}
		rep.Name, rep.Version, rep.Commit, rep.Artifacts = m.Name, m.Version, m.Commit, m.Artifacts
	}
	a, err := listFiles(dirs[0])
	if err != nil {
		return rep, err
	}
	b, err := listFiles(dirs[1])
	if err != nil {
		return rep, err
	}
	for _, name := range unionSorted(a, b) {
		x, err1 := os.ReadFile(filepath.Join(dirs[0], name))
		y, err2 := os.ReadFile(filepath.Join(dirs[1], name))
		if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
			rep.Differ = append(rep.Differ, name)
		}
	}
	if len(rep.Differ) > 0 {
		return rep, fmt.Errorf("commit %s: %w: %s", rep.Commit, ErrNotReproducible, strings.Join(rep.Differ, ", "))
	}
	if _, err := Verify(ctx, VerifyOptions{Dir: dirs[0]}); err != nil {
		return rep, err
	}
	rep.Reproducible = true
	return rep, nil
}

func buildOnce(ctx context.Context, o CheckOptions, dir string) (*Manifest, error) {
	r, err := OpenRepo(ctx, o.Repo)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return buildInto(ctx, r, BuildOptions{Ref: o.Ref, ContractFile: o.ContractFile, Provenance: true, Progress: o.Progress}, dir)
}

func listFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, nil
}

func unionSorted(a, b []string) []string {
	u := append(slices.Clone(a), b...)
	slices.Sort(u)
	return slices.Compact(u)
}
