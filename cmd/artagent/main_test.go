package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/art-runtime/art/internal/otlpcli"
	"github.com/art-runtime/art/internal/systest"
	"github.com/art-runtime/art/lib/execx"
)

func TestMain(m *testing.M) {
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	testscript.Main(m, map[string]func(){"artagent": func() { os.Exit(run()) }, "artobs-otlp": func() { os.Exit(otlpcli.Main()) }})
}

func TestScripts(t *testing.T) {
	testdata, err := filepath.Abs("../../testdata/agent")
	if err != nil {
		t.Fatal(err)
	}
	gocache := systest.GoEnv(t, "GOCACHE")
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			// TESTDATA holds the Go project, the mock scripts, model.sh and
			// the fake agy. The verify command `go test` needs a build cache
			// and GOPATH; the scripts pass them to tools with --env. The
			// shared build cache keeps `go test` fast and is safe to share.
			env.Setenv("TESTDATA", testdata)
			env.Setenv("GOCACHE", gocache)
			env.Setenv("GOPATH", filepath.Join(env.WorkDir, ".gopath"))
			env.Setenv("GOTOOLCHAIN", "local")
			env.Setenv("GOFLAGS", "-buildvcs=false")
			return nil
		},
		// [landlock]: the kernel can enforce Landlock (ABI >= 1).
		Condition: func(cond string) (bool, error) {
			if cond == "landlock" {
				return execx.Probe().Landlock.ABI >= 1, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: systest.ScriptCmds(map[string]systest.ScriptCmd{
			"events":     events,
			"fakeopenai": fakeOpenAI,
		}),
		// ARTAGENT_UPDATE_SCRIPTS=1 rewrites the want files of failing
		// `cmp` commands in the scripts; review the diff before committing.
		UpdateScripts: os.Getenv("ARTAGENT_UPDATE_SCRIPTS") != "",
	})
}

// events FILE writes the last command's stdout, AgentEvent JSON Lines, to
// FILE without what differs from run to run (time, latency_ms), keys
// sorted, one event per line: `cmp FILE want` then compares whole events.
func events(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: events FILE")
	}
	if err := os.WriteFile(ts.MkAbs(args[0]), []byte(normalizeEvents(ts, ts.ReadFile("stdout"))), 0o644); err != nil {
		ts.Fatalf("events: %v", err)
	}
}

func normalizeEvents(ts *testscript.TestScript, s string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			ts.Fatalf("not a JSON line: %s", line)
		}
		delete(m, "time")
		delete(m, "latency_ms")
		out, _ := json.Marshal(m) // map keys sorted
		b.Write(out)
		b.WriteByte('\n')
	}
	return b.String()
}

// fakeopenai [-stream] REPLIES starts a loopback server speaking the
// OpenAI chat completions wire format for the rest of the script and sets
// $OPENAI_BASE_URL. Request N is answered with line N of REPLIES as the
// assistant's content (or, when the request offers tools, as the
// arguments of a "decide" tool call), with usage; a request without the
// bearer token in $ART_TEST_KEY gets 401. A line "!http CODE [SECONDS]"
// answers with that status (and Retry-After); "!length TEXT" answers TEXT
// with finish_reason "length". Each request body is appended to
// requests.jsonl.
func fakeOpenAI(ts *testscript.TestScript, neg bool, args []string) {
	stream := len(args) == 2 && args[0] == "-stream"
	if stream {
		args = args[1:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fakeopenai [-stream] REPLIES")
	}
	replies := strings.Split(strings.TrimSuffix(ts.ReadFile(args[0]), "\n"), "\n")
	key := ts.Getenv("ART_TEST_KEY")
	log := ts.MkAbs("requests.jsonl")
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" && r.Header.Get("Authorization") == "Bearer "+key {
			// The context probes (/v1/models, /props, /api/show): this
			// server says nothing about its context.
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		i := n
		n++
		if f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.Write(append(body, '\n'))
			f.Close()
		}
		mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"bad key or path","type":"invalid_request_error"}}`)
			return
		}
		if i >= len(replies) {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"no more replies"}}`)
			return
		}
		reply, finish := replies[i], "stop"
		if code, retryAfter, ok := httpDirective(reply); ok {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"error":{"message":"fake status %d","type":"server_error"}}`, code)
			return
		}
		if rest, ok := strings.CutPrefix(reply, "!length "); ok {
			reply, finish = rest, "length"
		}
		if bytes.Contains(body, []byte(`"tools":[`)) {
			args, _ := json.Marshal(reply)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"decide","arguments":%s}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`, i, args)
			return
		}
		replies[i] = reply
		content, _ := json.Marshal(replies[i])
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			half := len(replies[i]) / 2
			for _, part := range []string{replies[i][:half], replies[i][half:]} {
				c, _ := json.Marshal(part)
				fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", c)
			}
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}]}\n\n", finish)
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":10,\"total_tokens\":110}}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":%q}],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`, content, finish)
	}))
	ts.Defer(srv.Close)
	ts.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
}

// httpDirective parses a fakeopenai "!http CODE [RETRY_AFTER]" line.
func httpDirective(line string) (int, string, bool) {
	f := strings.Fields(line)
	if len(f) < 2 || len(f) > 3 || f[0] != "!http" {
		return 0, "", false
	}
	code, err := strconv.Atoi(f[1])
	if err != nil {
		return 0, "", false
	}
	if len(f) == 3 {
		return code, f[2], true
	}
	return code, "", true
}
