package goal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
)

func TestParseEvidence(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("notes.md", []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir("sub", 0o755); err != nil {
		t.Fatal(err)
	}
	const helloDigest = "sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
	tests := []struct {
		spec string
		want string // canonical JSON (recorded_at zero), or "!code:substring"
	}{
		{"note:all green: really", `{"type":"note","text":"all green: really","recorded_at":"0001-01-01T00:00:00Z"}`},
		{"file:notes.md", `{"type":"file","path":"notes.md","digest":"` + helloDigest + `","recorded_at":"0001-01-01T00:00:00Z"}`},
		{"file:./sub/../notes.md", `{"type":"file","path":"notes.md","digest":"` + helloDigest + `","recorded_at":"0001-01-01T00:00:00Z"}`},
		{"task:t-1=succeeded", `{"type":"task","task":"t-1","state":"succeeded","recorded_at":"0001-01-01T00:00:00Z"}`},
		// Without a state: the queue gives it (Store.Sources).
		{"task:t-1", `{"type":"task","task":"t-1","recorded_at":"0001-01-01T00:00:00Z"}`},
		{"event:sha256:" + hex64('d'), `{"type":"event","event":"sha256:` + hex64('d') + `","recorded_at":"0001-01-01T00:00:00Z"}`},
		{"url:https://ci.example/run/1?x=y", `{"type":"url","url":"https://ci.example/run/1?x=y","recorded_at":"0001-01-01T00:00:00Z"}`},
		{"command:0:go test ./...", `{"type":"command","argv":["go","test","./..."],"exit_code":0,"recorded_at":"0001-01-01T00:00:00Z"}`},
		{"command:1:sh -c 'exit 1'", `{"type":"command","argv":["sh","-c","exit 1"],"exit_code":1,"recorded_at":"0001-01-01T00:00:00Z"}`},
		{"command:0@notes.md:artexec run -- true", `{"type":"command","argv":["artexec","run","--","true"],"exit_code":0,"path":"notes.md","digest":"` + helloDigest + `","recorded_at":"0001-01-01T00:00:00Z"}`},

		{"", "!2:want TYPE:REF"},
		{"note", "!2:want TYPE:REF"},
		{":x", "!2:want TYPE:REF"},
		{"Note:x", `!2:unknown evidence type "Note"`},
		{"note:", "!2:text: required"},
		{"file:missing.md", "!4:missing.md: not found"},
		{"file:sub", "!2:not a regular file"},
		{"file:", "!2:empty path"},
		{"task:t1=", "!2:want task:ID or task:ID=STATE"},
		{"task:", "!2:task: \"\": empty"},
		{"task:a/b", "!2:character '/' not allowed"},
		{"task:a.b", `!2:task "a.b": not an artq task id: character '.' not allowed`},
		{"task:a.b=succeeded", `!2:"a.b": not an artq task id: character '.' not allowed`},
		{"task:t1=finished", `!2:"finished" is not a task state`},
		{"task:../t=queued", "!2:task:"},
		{"event:abc", "!2:event:"},
		{"url:ftp:/x", "!2:no host"},
		{"url:https://user:pw@x.example/", "!2:credentials"},
		{"command:0", "!2:want command:EXIT:WORDS"},
		{"command:x:go", "!2:exit code \"x\""},
		{"command:256:go", "!2:exit code \"256\""},
		{"command:-1:go", "!2:exit code \"-1\""},
		{"command:0:", "!2:no command words"},
		{"command:0:go test ./... && rm -rf /", "!2:command words"},
		{"command:0@missing:go", "!4:not found"},
	}
	for _, tt := range tests {
		e, err := ParseEvidence(tt.spec)
		if code, msg, isErr := strings.Cut(strings.TrimPrefix(tt.want, "!"), ":"); strings.HasPrefix(tt.want, "!") && isErr {
			if err == nil {
				t.Errorf("ParseEvidence(%q) = %+v; want an error", tt.spec, e)
				continue
			}
			if got := exitcode.Of(err); string(rune('0'+got)) != code {
				t.Errorf("ParseEvidence(%q) exit %d (%v); want %s", tt.spec, got, err, code)
			}
			if !strings.Contains(err.Error(), msg) {
				t.Errorf("ParseEvidence(%q) = %q; want it to mention %q", tt.spec, err, msg)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseEvidence(%q) = %v", tt.spec, err)
			continue
		}
		got, _ := jsonx.Marshal(e)
		if string(got) != tt.want {
			t.Errorf("ParseEvidence(%q) =\n %s\nwant\n %s", tt.spec, got, tt.want)
		}
	}
	_, err := ParseEvidence("file:" + filepath.Join(dir, "nope"))
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("missing absolute file: %v; want ErrNotFound", err)
	}
}
