package clibase

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Companion finds a helper beside the running executable first, then on
// PATH, and names what it looked for when there is none.
func TestCompanion(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, _ = filepath.EvalSymlinks(exe)
	dir := t.TempDir()
	onPath := filepath.Join(dir, "art-companion-test")
	if err := os.WriteFile(onPath, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if got, err := Companion("art-companion-test"); err != nil || got != onPath {
		t.Errorf("on PATH: %q, %v; want %s", got, err, onPath)
	}
	// Beside the executable wins over PATH.
	beside := filepath.Join(filepath.Dir(exe), "art-companion-test")
	if err := os.WriteFile(beside, []byte("#!/bin/sh\n"), 0o755); err == nil {
		defer os.Remove(beside)
		if got, err := Companion("art-companion-test"); err != nil || got != beside {
			t.Errorf("beside: %q, %v; want %s", got, err, beside)
		}
	}
	_, err = Companion("art-companion-none")
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "art-companion-none") || !strings.Contains(err.Error(), filepath.Dir(exe)) {
		t.Errorf("missing: %v; want ErrNotExist naming the program and the directory", err)
	}
}
