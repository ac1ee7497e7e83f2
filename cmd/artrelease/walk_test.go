package main

import (
	"testing"

	"github.com/alecthomas/kong"

	"github.com/art-runtime/art/internal/systest"
)

// TestBadFlagValues: every flag of every command, given a bad value, is
// refused with exit 2 (or its documented code) and an error naming the
// flag (systest.BadFlags).
func TestBadFlagValues(t *testing.T) {
	systest.BadFlags(t, systest.FlagWalk{
		Grammar: &CLI{},
		Base:    map[string][]string{"build": {"--ref", "HEAD", "--out", t.TempDir() + "/d"}, "verify": {t.TempDir()}, "verify-tag": {"v1.0.0"}},
		Strings: map[string]string{"--repo": "/nonexistent-repo", "--contract": "/nonexistent.json", "build --ref": "-bad", "check --ref": "-bad", "init --out": "/nonexistent-dir/release.json"},
		Codes:   map[string]int{"build --repo": 4, "check --repo": 4, "verify-tag --repo": 4, "verify --repo": 4, "build --contract": 4, "check --contract": 4, "verify --contract": 4, "verify-tag --contract": 4, "init --repo": 4},
		Skip:    map[string]string{"verify-tag --main": "read only once the tag verified: needs a repository with a signed tag"},
		Run:     systest.InProcess(t, "artrelease", func() (any, []kong.Option) { return &CLI{}, nil }),
	})
}
