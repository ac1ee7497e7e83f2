package openai_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/art-runtime/art/internal/tinymodel"
	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/provider/openai"
)

// The served context of the tiny models (their Modelfile's num_ctx) and
// the reply limit the runs ask for.
const (
	ollamaCtx       = 2048
	ollamaMaxTokens = 256
)

// ollamaServer is a real `ollama serve` on loopback with the tiny steered
// models created in it: art-valid, art-repeat, art-runaway (see
// internal/tinymodel). Its log (OLLAMA_DEBUG=1) goes to a file.
type ollamaServer struct {
	base string // http://127.0.0.1:PORT
	log  string
}

// truncations counts the server's own record of a prompt it cut to fit
// ("truncating input messages").
func (s *ollamaServer) truncations(t *testing.T) int {
	b, err := os.ReadFile(s.log)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("truncating input messages"))
}

// startOllama starts a server for the test, stopped when it ends.
// ART_OLLAMA names the binary (scripts/ollama.sh builds it); without it
// the test skips, except under CI.
func startOllama(t *testing.T) *ollamaServer {
	t.Helper()
	bin := os.Getenv("ART_OLLAMA")
	if bin == "" {
		why := "set ART_OLLAMA to an ollama binary (scripts/ollama.sh builds one) to run artagent against a real Ollama"
		if os.Getenv("CI") != "" {
			t.Fatalf("the Ollama integration tests must run in CI: %s", why)
		}
		t.Skip(why)
	}
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := append(os.Environ(), "HOME="+dir, "OLLAMA_HOST="+addr, "OLLAMA_MODELS="+filepath.Join(dir, "models"),
		"OLLAMA_DEBUG=1", "OLLAMA_NUM_PARALLEL=1", "OLLAMA_KEEP_ALIVE=1h", "OLLAMA_MAX_LOADED_MODELS=3", "OLLAMA_NOPRUNE=1")
	s := &ollamaServer{base: "http://" + addr, log: filepath.Join(dir, "server.log")}
	logf, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "serve")
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	showLog := func() string { b, _ := os.ReadFile(s.log); return string(b) }
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		resp, err := hc.Get(s.base + "/")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ollama serve on %s did not answer in 2 minutes:\n%s", addr, showLog())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := tinymodel.WriteFile(filepath.Join(dir, "tiny.gguf")); err != nil {
		t.Fatal(err)
	}
	for _, k := range tinymodel.Kinds {
		mf := filepath.Join(dir, "Modelfile."+string(k))
		if err := os.WriteFile(mf, []byte(tinymodel.Modelfile("./tiny.gguf", k, ollamaCtx)), 0o644); err != nil {
			t.Fatal(err)
		}
		c := exec.Command(bin, "create", "art-"+string(k), "-f", mf)
		c.Dir, c.Env = dir, env
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("ollama create art-%s: %v\n%s\nserver log:\n%s", k, err, out, showLog())
		}
	}
	return s
}

// ollamaWorkspace holds what the steered decisions act on: a file larger
// than the context (every read of it must be cut to fit) and one they edit.
func ollamaWorkspace(t *testing.T) string {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, tinymodel.BigFile), []byte(strings.Repeat("package main // filler line of source text\n", 400)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, tinymodel.EditFile), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

type ollamaRun struct {
	res   *agent.Result
	steps []*agent.Event // step events
	outs  []*agent.Event // the outcome event of each step
}

func (r *ollamaRun) notes() string {
	var n []string
	for _, ev := range r.steps {
		n = append(n, ev.Notes...)
	}
	return strings.Join(n, "\n")
}

func runOllama(t *testing.T, s *ollamaServer, model string, cfg openai.Config, steps int) *ollamaRun {
	t.Helper()
	return runServer(t, s.base+"/v1", model, cfg, steps)
}

// runServer runs artagent for steps against the server at base (its /v1
// root), recording every event.
func runServer(t *testing.T, base, model string, cfg openai.Config, steps int) *ollamaRun {
	t.Helper()
	cfg.BaseURL, cfg.Model = base, model
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = ollamaMaxTokens
	}
	cfg.Timeout = 2 * time.Minute
	p, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r := &ollamaRun{}
	acfg := agent.Config{Task: "Read big.go, edit a.txt, run ls and verify, as often as you like.", Workspace: ollamaWorkspace(t),
		Allow: []string{tinymodel.Program}, Verify: []string{"true"}, MaxSteps: steps, MaxFormatErrors: steps, Provider: "openai"}
	r.res, err = agent.Run(context.Background(), acfg, p, agent.Options{Observe: func(ev *agent.Event) {
		switch ev.Type {
		case agent.EventStep:
			r.steps = append(r.steps, ev)
		case agent.EventResult:
		default:
			r.outs = append(r.outs, ev)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s after %d steps (%v), usage %+v", model, r.res.Status, r.res.Steps, r.res.Err, r.res.Usage)
	return r
}

// fits fails the test for any request whose prompt and reply limit exceed
// the served context.
func (r *ollamaRun) fits(t *testing.T, maxTokens int) { t.Helper(); r.within(t, maxTokens, ollamaCtx) }

func (r *ollamaRun) within(t *testing.T, maxTokens, served int) {
	t.Helper()
	for _, ev := range r.steps {
		if ev.Usage == nil || ev.Usage.InputTokens == 0 {
			continue
		}
		if ev.Usage.InputTokens+int64(maxTokens) > int64(served) {
			t.Errorf("step %d: prompt_tokens %d + max_tokens %d exceed the served context %d", ev.Step, ev.Usage.InputTokens, maxTokens, served)
		}
	}
}

var ollamaModes = []struct {
	name         string
	stream, tool bool
}{{"json_schema", false, false}, {"json_schema stream", true, false}, {"tool call", false, true}}

// testThirtySteps runs artagent against a real Ollama serving the tiny steered
// model, 30 steps in each of json_schema, streamed and tool-call modes,
// with the context asked from the server: every run reaches its step
// limit, every step is a real decision acted on, no request exceeds the
// served context, and the server never truncated a prompt.
//
// The model samples its decision uniformly from five (tinymodel.Decisions),
// so one run of 30 misses a given action with probability 0.8^30 ≈ 0.12 %
// (about 1 % of CI runs over the three modes and four actions): each
// run must show at least three kinds (two missing: ≤ 0.6^30 ≈ 2e-7), and
// the 90 steps together all four (0.8^90 ≈ 2e-9 each).
func testThirtySteps(t *testing.T, s *ollamaServer) {
	all := map[string]int{}
	defer func() {
		if !t.Failed() && (all["read_file"] == 0 || all["replace_text"] == 0 || all["verify"] == 0 || all["run_tool"] == 0) {
			t.Errorf("actions over the three modes %v: want each of read_file, replace_text, run_tool, verify", all)
		}
	}()
	for _, mode := range ollamaModes {
		t.Run(mode.name, func(t *testing.T) {
			before := s.truncations(t)
			r := runOllama(t, s, "art-valid", openai.Config{Stream: mode.stream, ToolCall: mode.tool, ServerContext: true}, 30)
			if r.res.Status != agent.StatusStepLimit || r.res.Steps != 30 {
				t.Fatalf("run ended %s after %d steps: %v", r.res.Status, r.res.Steps, r.res.Err)
			}
			actions := map[string]int{}
			for i, ev := range r.steps {
				if ev.Decision == nil {
					t.Errorf("step %d: no decision: %q (%s)", ev.Step, derefOr(ev.Reply), r.outs[i].Type)
					continue
				}
				actions[string(ev.Action)]++
				all[string(ev.Action)]++
			}
			if len(actions) < 3 {
				t.Errorf("actions %v: want at least three of read_file, replace_text, run_tool, verify", actions)
			}
			r.fits(t, ollamaMaxTokens)
			if n := s.truncations(t) - before; n != 0 {
				t.Errorf("the server truncated %d prompts silently", n)
			}
			if notes := r.notes(); !strings.Contains(notes, "Ollama serves the model with 2048 tokens of context") {
				t.Errorf("no note of the server's context; notes:\n%s", notes)
			}
		})
	}
}

// chose reports whether any step of the run decided action.
func (r *ollamaRun) chose(action string) bool {
	for _, ev := range r.steps {
		if ev.Decision != nil && string(ev.Action) == action {
			return true
		}
	}
	return false
}

func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// testServerEnded: Ollama aborts a reply that repeats one token 30
// times and ends it without a finish reason (stream: no [DONE]; whole:
// finish_reason null; tools: an empty message). Each is a cut reply, told
// to the model, in every mode; two in a row end the run as truncated,
// never as a provider (transport) error.
func testServerEnded(t *testing.T, s *ollamaServer) {
	for _, mode := range ollamaModes {
		t.Run(mode.name, func(t *testing.T) {
			r := runOllama(t, s, "art-repeat", openai.Config{Stream: mode.stream, ToolCall: mode.tool, ServerContext: true}, 10)
			if r.res.Status != agent.StatusTruncated || r.res.Steps != agent.MaxTruncations {
				t.Fatalf("run ended %s after %d steps: %v; want truncated after %d", r.res.Status, r.res.Steps, r.res.Err, agent.MaxTruncations)
			}
			for _, ev := range r.outs {
				if ev.Type != agent.EventTruncated || !strings.Contains(derefOr(ev.Observation), "the server ended your reply without finishing it") {
					t.Errorf("step %d: %s %q", ev.Step, ev.Type, derefOr(ev.Observation))
				}
			}
		})
	}
}

// testRunaway: a reply that never ends is cut at max_tokens and told
// as such; with max_completion_tokens, which Ollama ignores, the reply runs
// past the limit and the provider says so.
func testRunaway(t *testing.T, s *ollamaServer) {
	t.Run("max_tokens", func(t *testing.T) {
		r := runOllama(t, s, "art-runaway", openai.Config{MaxTokens: 64, ServerContext: true}, 10)
		if r.res.Status != agent.StatusTruncated {
			t.Fatalf("run ended %s: %v", r.res.Status, r.res.Err)
		}
		for i, ev := range r.outs {
			if ev.Type != agent.EventTruncated || !strings.Contains(derefOr(ev.Observation), "at its token limit") || r.steps[i].Usage.OutputTokens > 64 {
				t.Errorf("step %d: %s %q usage %+v", ev.Step, ev.Type, derefOr(ev.Observation), r.steps[i].Usage)
			}
		}
	})
	t.Run("max_completion_tokens ignored", func(t *testing.T) {
		r := runOllama(t, s, "art-runaway", openai.Config{MaxTokens: 32, TokenField: openai.FieldMaxCompletionTokens, ServerContext: true}, 10)
		if r.res.Status != agent.StatusTruncated {
			t.Fatalf("run ended %s: %v", r.res.Status, r.res.Err)
		}
		if notes := r.notes(); !strings.Contains(notes, fmt.Sprintf("the server ignored max_completion_tokens (a reply of %d tokens, 32 allowed)", tinymodel.RunawayPredict)) {
			t.Errorf("notes:\n%s", notes)
		}
	})
}

// testOneTokenDecision: with max_tokens 1 every reply is one whole
// decision that Ollama reports with finish_reason "length"; each is taken.
func testOneTokenDecision(t *testing.T, s *ollamaServer) {
	r := runOllama(t, s, "art-valid", openai.Config{MaxTokens: 1, ServerContext: true}, 5)
	if r.res.Status != agent.StatusStepLimit || r.res.Steps != 5 {
		t.Fatalf("run ended %s after %d steps: %v", r.res.Status, r.res.Steps, r.res.Err)
	}
	for _, ev := range r.steps {
		if ev.Decision == nil {
			t.Errorf("step %d: reply %q not taken", ev.Step, derefOr(ev.Reply))
		}
	}
}

// testSilentTruncation: told nothing of the server's context (no
// probe, --context-tokens 16384 against a model served with 2048), the
// provider sees from usage that Ollama cut the prompt, fits to a smaller
// context and sends again, with a note; every prompt the server cut was
// caught so (one recorded attempt each), and the run goes on to its step
// limit within the served context.
//
// What overflows the served context is reading big.go, one of the five
// decisions the model picks uniformly: a run of 12 steps has none with
// probability 0.8^12 ≈ 7 %, and then nothing is cut and nothing is
// tested. Such a run is repeated, up to four runs (all four without a
// read: 2e-5).
func testSilentTruncation(t *testing.T, s *ollamaServer) {
	var r *ollamaRun
	var before int
	for try := 1; ; try++ {
		before = s.truncations(t)
		r = runOllama(t, s, "art-valid", openai.Config{ContextTokens: 16384}, 12)
		if r.res.Status != agent.StatusStepLimit || r.res.Steps != 12 {
			t.Fatalf("run ended %s after %d steps: %v", r.res.Status, r.res.Steps, r.res.Err)
		}
		if r.chose("read_file") || try == 4 {
			break
		}
		t.Logf("run %d: the model did not read %s in 12 steps; again", try, tinymodel.BigFile)
	}
	caught := 0
	for _, ev := range r.steps {
		for _, a := range ev.Retries {
			if strings.Contains(a.Error, "truncated the prompt silently") {
				caught++
			}
		}
	}
	cut := s.truncations(t) - before
	if cut == 0 || caught != cut {
		t.Fatalf("the server truncated %d prompts, the provider caught %d\nnotes:\n%s", cut, caught, r.notes())
	}
	r.fits(t, ollamaMaxTokens)
}

// TestOllama runs artagent against a real Ollama (built by
// scripts/ollama.sh, named by ART_OLLAMA) serving the tiny steered models
// of internal/tinymodel on loopback.
func TestOllama(t *testing.T) {
	s := startOllama(t)
	t.Run("30 steps", func(t *testing.T) { testThirtySteps(t, s) })
	t.Run("server-ended replies", func(t *testing.T) { testServerEnded(t, s) })
	t.Run("runaway", func(t *testing.T) { testRunaway(t, s) })
	t.Run("one-token decision", func(t *testing.T) { testOneTokenDecision(t, s) })
	t.Run("silent truncation", func(t *testing.T) { testSilentTruncation(t, s) })
}
