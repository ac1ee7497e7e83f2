package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// Server kinds, as told by the endpoint that answered the context probe.
const (
	serverUnknown     = ""
	serverOllama      = "Ollama"
	serverLlamaServer = "llama-server"
	serverVLLM        = "vLLM"
)

// refuses says whether a kind of server refuses a prompt longer than its
// context (HTTP 400) instead of truncating it silently, as Ollama does.
func refuses(kind string) bool { return kind == serverLlamaServer || kind == serverVLLM }

// probeTimeout bounds one context probe request.
const probeTimeout = 5 * time.Second

// serverContext is what a probe learnt: the context the server serves the
// model with (0: unknown), which server said so, and whether the figure is
// the one in force (Ollama's /api/ps for a loaded model, llama-server's
// n_ctx, vLLM's max_model_len) or a bound (Ollama's num_ctx or the
// model's trained length, before it is loaded).
type serverContext struct {
	tokens int
	kind   string
	exact  bool
	source string
}

// probeContext asks the server the model's context: vLLM's /v1/models
// (max_model_len), llama-server's /props (n_ctx), Ollama's /api/ps (the
// loaded model's context_length) and /api/show (num_ctx, the model's
// context_length). Every failure is silence: the caller keeps its
// configured context, and a server that answers none of them is not an
// error.
func (p *Provider) probeContext(ctx context.Context) serverContext {
	root := strings.TrimSuffix(strings.TrimSuffix(p.base, "/"), "/v1")
	if doc, ok := p.probeGet(ctx, strings.TrimSuffix(p.base, "/")+"/models"); ok {
		for _, m := range doc.Get("data").Array() {
			if m.Get("id").String() == p.cfg.Model {
				if n := m.Get("max_model_len").Int(); n > 0 {
					return serverContext{tokens: int(n), kind: serverVLLM, exact: true, source: "/v1/models max_model_len"}
				}
			}
		}
	}
	if doc, ok := p.probeGet(ctx, root+"/props"); ok {
		if n := doc.Get("default_generation_settings.n_ctx").Int(); n > 0 {
			return serverContext{tokens: int(n), kind: serverLlamaServer, exact: true, source: "/props n_ctx"}
		}
	}
	if sc, ok := p.probeOllama(ctx, root); ok {
		return sc
	}
	return serverContext{}
}

// probeOllama reads Ollama's /api/ps (exact, once the model is loaded),
// else its /api/show: the Modelfile's num_ctx, capped by the model's
// trained context_length as Ollama caps it; without num_ctx, Ollama serves
// its default (OLLAMA_CONTEXT_LENGTH, 4096 unless set or a large GPU
// raises it), which it does not report: 4096 is assumed until /api/ps
// tells.
func (p *Provider) probeOllama(ctx context.Context, root string) (serverContext, bool) {
	show, ok := p.probePost(ctx, root+"/api/show", map[string]string{"model": p.cfg.Model})
	if !ok || !show.Get("model_info").IsObject() {
		return serverContext{}, false
	}
	if ps, ok := p.probeGet(ctx, root+"/api/ps"); ok {
		for _, m := range ps.Get("models").Array() {
			if sameOllamaModel(m.Get("name").String(), p.cfg.Model) || sameOllamaModel(m.Get("model").String(), p.cfg.Model) {
				if n := m.Get("context_length").Int(); n > 0 {
					return serverContext{tokens: int(n), kind: serverOllama, exact: true, source: "/api/ps context_length"}, true
				}
			}
		}
	}
	trained := 0
	show.Get("model_info").ForEach(func(k, v gjson.Result) bool {
		if strings.HasSuffix(k.String(), ".context_length") {
			trained = int(v.Int())
			return false
		}
		return true
	})
	numCtx, source := 0, "/api/show num_ctx"
	for _, line := range strings.Split(show.Get("parameters").String(), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "num_ctx" {
			numCtx, _ = strconv.Atoi(f[1])
		}
	}
	if numCtx <= 0 {
		numCtx, source = ollamaDefaultContext, "Ollama's default context (not reported by /api/show)"
	}
	if trained > 0 && trained < numCtx {
		numCtx, source = trained, "/api/show context_length"
	}
	return serverContext{tokens: numCtx, kind: serverOllama, source: source}, true
}

// ollamaDefaultContext is what Ollama serves a model with when neither its
// Modelfile nor OLLAMA_CONTEXT_LENGTH says (on a CPU or a small GPU).
const ollamaDefaultContext = 4096

// sameOllamaModel: Ollama names a model "name:tag", and "name" means
// "name:latest".
func sameOllamaModel(a, b string) bool {
	norm := func(s string) string {
		if !strings.Contains(s, ":") {
			return s + ":latest"
		}
		return s
	}
	return a != "" && norm(a) == norm(b)
}

func (p *Provider) probeGet(ctx context.Context, url string) (gjson.Result, bool) {
	return p.probe(ctx, http.MethodGet, url, nil)
}

func (p *Provider) probePost(ctx context.Context, url string, body any) (gjson.Result, bool) {
	b, err := json.Marshal(body)
	if err != nil {
		return gjson.Result{}, false
	}
	return p.probe(ctx, http.MethodPost, url, b)
}

// probe is one bounded request whose reply must be a JSON object.
func (p *Provider) probe(ctx context.Context, method, url string, body []byte) (gjson.Result, bool) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return gjson.Result{}, false
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if p.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.cfg.APIKey)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return gjson.Result{}, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK || !gjson.ValidBytes(b) {
		return gjson.Result{}, false
	}
	doc := gjson.ParseBytes(b)
	return doc, doc.IsObject()
}

// describe is a note's account of a probe.
func (sc serverContext) describe() string {
	return fmt.Sprintf("%s serves the model with %d tokens of context (%s)", sc.kind, sc.tokens, sc.source)
}
