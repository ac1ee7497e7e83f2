package main

import (
	"os"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/art-runtime/art/internal/systest"
)

// TestBadFlagValues: every flag of every command, given a bad value, is
// refused with exit 2 and an error naming the flag (systest.BadFlags).
func TestBadFlagValues(t *testing.T) {
	dir := t.TempDir()
	sink := "jsonl:" + dir + "/e.jsonl"
	if err := os.WriteFile(dir+"/empty.jsonl", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	systest.BadFlags(t, systest.FlagWalk{
		Grammar: &CLI{},
		Base: map[string][]string{
			"emit": {"--sink", sink}, "deliver": {"--sink", sink}, "tail": {dir + "/empty.jsonl"}, "verify": {"/nonexistent.jsonl"},
		},
		Strings: map[string]string{"--sink": "ftp:x", "--queue": "a/b", "--subject": "{", "--type": "{", "--hmac-key-env": "NO_SUCH_VAR_FOR_ART"},
		Skip: map[string]string{"tail --subject": "any text is a subject (tail matches it exactly)",
			"serve --sink": "any path names a sink (it may not exist yet: the page says so)"},
		Run: systest.InProcess(t, "artobs", func() (any, []kong.Option) { return &CLI{}, nil }),
	})
}
