// Package tinymodel makes a tiny llama-architecture model, as a GGUF file
// Ollama (and llama.cpp) load, whose replies are steered: the tests of the
// openai provider run artagent against a real model server with it, many
// real steps, in a few seconds on a CPU.
//
// The model is a bigram machine. Attention and feed-forward outputs are
// zero, so the residual stream is the token embedding; each embedding is
// a one-hot "state", and the output layer maps a state to the logits of
// the next token. A prompt ends with a control token the chat template
// writes (which one depends on the model made from the file), and from it
// the model picks one of a few whole replies, each a single token:
//
//   - <|a|>: one of a few valid decisions as JSON, in the key order and
//     compact form a json_schema grammar of the decision schema accepts
//     (read a large file, run a tool, edit, verify), then end of text;
//   - <|t|>: the same decisions as a tool call of the function "decide";
//   - <|r|>, <|rt|>: a decision whose summary repeats one token forever,
//     which Ollama aborts after 30 repeats (the stream ends with no
//     finish reason);
//   - <|w|>, <|wt|>: a decision whose summary never ends (two tokens in
//     turn), cut at the reply's token limit.
//
// The tokenizer is byte-level BPE ("gpt2") with merges learnt here from
// text like what artagent sends, so a prompt takes about as many tokens
// per byte as with a real model. Everything is deterministic: the same
// file every time.
package tinymodel

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/art-runtime/art/internal/gguf"
	"github.com/art-runtime/art/lib/agent/provider"
)

// RunawayPredict is the runaway kind's own reply limit.
const RunawayPredict = 96

// Model sizes.
const (
	ContextLength = 4096 // what the file declares it was trained for
	embd          = 16   // one dimension per state (fewer are used)
	heads         = 2
	ff            = 32
	layers        = 2
	merges        = 600
)

// Files and the workspace the decisions assume: BigFile is read (it is
// larger than the context, so the observation must be cut), EditFile is
// edited back and forth between "one" and "two", and Program is run.
const (
	BigFile  = "big.go"
	EditFile = "a.txt"
	Program  = "ls"
)

// Decisions are the valid replies, as JSON in the strict schema's key
// order.
var Decisions = []string{
	decision(`"action":"read_file"`, `"path":"`+BigFile+`"`),
	decision(`"action":"run_tool"`, `"program":"`+Program+`"`, `"args":["-l"]`),
	decision(`"action":"replace_text"`, `"path":"`+EditFile+`"`, `"old":"one"`, `"new":"two"`),
	decision(`"action":"replace_text"`, `"path":"`+EditFile+`"`, `"old":"two"`, `"new":"one"`),
	decision(`"action":"verify"`),
}

// decision renders a strict decision: every field of the schema, in its
// order, null unless given.
func decision(fields ...string) string {
	order := []string{"action", "program", "args", "path", "old", "new", "summary", "reason"}
	set := map[string]string{}
	for _, f := range fields {
		k := strings.Trim(strings.SplitN(f, ":", 2)[0], `"`)
		set[k] = f
	}
	parts := make([]string, len(order))
	for i, k := range order {
		if f, ok := set[k]; ok {
			parts[i] = f
		} else {
			parts[i] = `"` + k + `":null`
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// prefix is a finish decision up to its summary's text.
func prefix(summary string) string {
	d := decision(`"action":"finish"`, `"summary":"`+summary+`"`)
	return d[:strings.Index(d, summary)+len(summary)]
}

func toolCall(args string) string {
	return `<tool_call>{"name":"decide","arguments":` + args + `}</tool_call>`
}

func toolPrefix(p string) string { return `<tool_call>{"name":"decide","arguments":` + p }

// The reply token that repeats (Ollama compares tokens trimmed) and the
// two that alternate in a runaway summary.
const (
	repeatToken = "@@zz"
	runToken1   = "@@ab"
	runToken2   = "@@cd"
)

// Control tokens. The chat template ends every prompt with one of the
// state tokens.
const (
	tokBOS = "<|bos|>"
	tokEOS = "<|end|>"
)

var roleTokens = []string{"<|system|>", "<|user|>", "<|assistant|>", "<|tool|>"}

// states (one-hot embedding dimensions).
const (
	stValidJSON = iota // also every ordinary token
	stValidTool
	stReply // a whole reply: end of text next
	stLoopJSON
	stLoopTool
	stLoopPrefix
	stRepeat
	stRunJSON
	stRunTool
	stRunPrefix
	stRun1
	stRun2
	nStates
)

// Kind names the models the tests create from the one file: each
// template ends the prompt with a different state token.
type Kind string

// Kinds.
const (
	Valid   Kind = "valid"
	Repeat  Kind = "repeat"
	Runaway Kind = "runaway"
)

// Kinds lists them.
var Kinds = []Kind{Valid, Repeat, Runaway}

var stateTokens = map[Kind][2]string{
	Valid:   {"<|a|>", "<|t|>"},
	Repeat:  {"<|r|>", "<|rt|>"},
	Runaway: {"<|w|>", "<|wt|>"},
}

// Template is the Ollama chat template of a kind: messages with role
// tokens, tool calls in <tool_call> tags (which is how Ollama finds
// them), and the state token last.
func Template(k Kind) string {
	st := stateTokens[k]
	return `{{- if .Tools }}<|system|>Tools:{{ range .Tools }} {{ . }}{{ end }}<|end|>{{ end }}` +
		`{{- range .Messages }}<|{{ .Role }}|>{{ .Content }}` +
		`{{- if .ToolCalls }}<tool_call>{{ range .ToolCalls }}{"name":"{{ .Function.Name }}","arguments":{{ .Function.Arguments }}}{{ end }}</tool_call>{{ end }}<|end|>{{ end }}` +
		`{{- if .Tools }}` + st[1] + `{{ else }}` + st[0] + `{{ end }}`
}

// Modelfile is the Modelfile of a kind, for `ollama create NAME -f`
// beside the GGUF file: numCtx is the context Ollama serves (0: its
// default). top_p 1 and top_k 0 leave the choice among replies to the
// weights. The runaway kind stops at RunawayPredict tokens when the
// request sets no limit Ollama reads.
func Modelfile(gguf string, k Kind, numCtx int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "FROM %s\nTEMPLATE \"\"\"%s\"\"\"\nPARAMETER top_p 1\nPARAMETER top_k 0\n", gguf, Template(k))
	if k == Runaway {
		fmt.Fprintf(&b, "PARAMETER num_predict %d\n", RunawayPredict)
	}
	if numCtx > 0 {
		fmt.Fprintf(&b, "PARAMETER num_ctx %d\n", numCtx)
	}
	return b.String()
}

// WriteFile writes the model to path.
func WriteFile(path string) error {
	var buf bytes.Buffer
	if err := Build().Write(&buf); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// Build makes the model.
func Build() *gguf.File {
	v := vocabulary()
	n := len(v.tokens)
	state := make([]int, n) // ordinary tokens: stValidJSON
	id := map[string]int{}
	for i, t := range v.tokens {
		id[t] = i
	}
	// logits[state][token]
	logit := make([][]float32, nStates)
	for s := range logit {
		logit[s] = make([]float32, n)
	}
	set := func(tok string, s int) { state[id[tok]] = s }
	// strong makes every other token of the ~900 improbable enough that
	// thousands of sampled replies never stray: at logit 30 against 0,
	// one of them is about 1e-10 per token at any temperature up to 1
	// (at 12 a stray token came about once in 90 replies). The decisions
	// share one logit, so the choice among them stays uniform.
	strong := float32(30)
	for _, d := range Decisions {
		logit[stValidJSON][id[d]] = strong
		logit[stValidTool][id[toolCall(d)]] = strong
		set(d, stReply)
		set(toolCall(d), stReply)
	}
	logit[stReply][id[tokEOS]] = strong
	for k, st := range stateTokens {
		switch k {
		case Valid:
			set(st[0], stValidJSON)
			set(st[1], stValidTool)
		case Repeat:
			set(st[0], stLoopJSON)
			set(st[1], stLoopTool)
		case Runaway:
			set(st[0], stRunJSON)
			set(st[1], stRunTool)
		}
	}
	logit[stLoopJSON][id[prefix("loop")]] = strong
	logit[stLoopTool][id[toolPrefix(prefix("loop"))]] = strong
	set(prefix("loop"), stLoopPrefix)
	set(toolPrefix(prefix("loop")), stLoopPrefix)
	logit[stLoopPrefix][id[repeatToken]] = strong
	set(repeatToken, stRepeat)
	logit[stRepeat][id[repeatToken]] = strong
	logit[stRunJSON][id[prefix("run")]] = strong
	logit[stRunTool][id[toolPrefix(prefix("run"))]] = strong
	set(prefix("run"), stRunPrefix)
	set(toolPrefix(prefix("run")), stRunPrefix)
	logit[stRunPrefix][id[runToken1]] = strong
	set(runToken1, stRun1)
	logit[stRun1][id[runToken2]] = strong
	set(runToken2, stRun2)
	logit[stRun2][id[runToken1]] = strong

	tokEmbd := make([]float32, n*embd)
	for t := range n {
		tokEmbd[t*embd+state[t]] = 1
	}
	// RMS norm turns a one-hot e_s into sqrt(embd)·e_s.
	scale := float32(1) / float32(4) // 1/sqrt(16)
	output := make([]float32, n*embd)
	for s := range nStates {
		for t := range n {
			output[t*embd+s] = logit[s][t] * scale
		}
	}
	ones := func(k int) []float32 {
		x := make([]float32, k)
		for i := range x {
			x[i] = 1
		}
		return x
	}
	tensors := []gguf.Tensor{
		{Name: "token_embd.weight", Dims: []uint64{embd, uint64(n)}, Data: tokEmbd},
		{Name: "output_norm.weight", Dims: []uint64{embd}, Data: ones(embd)},
		{Name: "output.weight", Dims: []uint64{embd, uint64(n)}, Data: output},
	}
	for l := range layers {
		p := fmt.Sprintf("blk.%d.", l)
		tensors = append(tensors,
			gguf.Tensor{Name: p + "attn_norm.weight", Dims: []uint64{embd}, Data: ones(embd)},
			gguf.Tensor{Name: p + "attn_q.weight", Dims: []uint64{embd, embd}, Data: make([]float32, embd*embd)},
			gguf.Tensor{Name: p + "attn_k.weight", Dims: []uint64{embd, embd}, Data: make([]float32, embd*embd)},
			gguf.Tensor{Name: p + "attn_v.weight", Dims: []uint64{embd, embd}, Data: make([]float32, embd*embd)},
			// Zero outputs: the layers add nothing to the residual stream.
			gguf.Tensor{Name: p + "attn_output.weight", Dims: []uint64{embd, embd}, Data: make([]float32, embd*embd)},
			gguf.Tensor{Name: p + "ffn_norm.weight", Dims: []uint64{embd}, Data: ones(embd)},
			gguf.Tensor{Name: p + "ffn_gate.weight", Dims: []uint64{embd, ff}, Data: make([]float32, embd*ff)},
			gguf.Tensor{Name: p + "ffn_up.weight", Dims: []uint64{embd, ff}, Data: make([]float32, embd*ff)},
			gguf.Tensor{Name: p + "ffn_down.weight", Dims: []uint64{ff, embd}, Data: make([]float32, embd*ff)},
		)
	}
	return &gguf.File{
		KV: map[string]any{
			"general.architecture":                   "llama",
			"general.name":                           "art-tiny",
			"general.alignment":                      uint32(gguf.Alignment),
			"llama.context_length":                   uint32(ContextLength),
			"llama.embedding_length":                 uint32(embd),
			"llama.block_count":                      uint32(layers),
			"llama.feed_forward_length":              uint32(ff),
			"llama.attention.head_count":             uint32(heads),
			"llama.attention.head_count_kv":          uint32(heads),
			"llama.attention.layer_norm_rms_epsilon": float32(1e-5),
			"llama.rope.dimension_count":             uint32(embd / heads),
			"llama.rope.freq_base":                   float32(10000),
			"llama.vocab_size":                       uint32(n),
			"tokenizer.ggml.model":                   "gpt2",
			"tokenizer.ggml.pre":                     "default",
			"tokenizer.ggml.tokens":                  v.tokens,
			"tokenizer.ggml.token_type":              v.types,
			"tokenizer.ggml.merges":                  v.merges,
			"tokenizer.ggml.bos_token_id":            uint32(id[tokBOS]),
			"tokenizer.ggml.eos_token_id":            uint32(id[tokEOS]),
			"tokenizer.ggml.add_bos_token":           true,
			"tokenizer.ggml.add_eos_token":           false,
		},
		Tensors: tensors,
	}
}

type vocab struct {
	tokens []string
	types  []int32
	merges []string
}

// Token types (llama.cpp's).
const (
	typeNormal  = 1
	typeControl = 3
)

// vocabulary is the control tokens, the 256 byte tokens, the learnt
// merges and the whole-reply tokens, in that order.
func vocabulary() vocab {
	var v vocab
	seen := map[string]bool{}
	add := func(t string, typ int32) {
		if seen[t] {
			panic("tinymodel: duplicate token " + t)
		}
		seen[t] = true
		v.tokens = append(v.tokens, t)
		v.types = append(v.types, typ)
	}
	add(tokBOS, typeControl)
	add(tokEOS, typeControl)
	for _, t := range roleTokens {
		add(t, typeControl)
	}
	for _, k := range Kinds {
		add(stateTokens[k][0], typeControl)
		add(stateTokens[k][1], typeControl)
	}
	b2u := byteToUnicode()
	for b := range 256 {
		add(string(b2u[byte(b)]), typeNormal)
	}
	for _, m := range learnMerges(corpus(), merges, b2u) {
		v.merges = append(v.merges, m[0]+" "+m[1])
		add(m[0]+m[1], typeNormal)
	}
	replies := []string{prefix("loop"), toolPrefix(prefix("loop")), prefix("run"), toolPrefix(prefix("run")), repeatToken, runToken1, runToken2}
	for _, d := range Decisions {
		replies = append(replies, d, toolCall(d))
	}
	for _, r := range replies {
		// Reply text has no spaces or newlines, so its byte-level form
		// is itself; it is never a merge result (the encoder never
		// produces it from a prompt).
		if seen[r] {
			panic("tinymodel: reply token is also a learnt token: " + r)
		}
		add(r, typeNormal)
	}
	return v
}

// corpus is text like what artagent sends a model: its instructions, a
// task, decisions, Go source and tool output.
func corpus() string {
	req := provider.NewRequest()
	req.Task = "Read big.go, then edit a.txt and verify."
	req.MaxSteps = 30
	req.Allow = []string{"ls", "cat", "go"}
	req.Verify = []string{"go", "test", "./..."}
	var b strings.Builder
	b.WriteString(provider.Instructions(req))
	b.WriteString(provider.StepNote(req))
	for _, d := range Decisions {
		b.WriteString(d + "\n")
	}
	b.WriteString(strings.Repeat("package main // filler line of source text\n", 20))
	b.WriteString("total 24\n-rw-r--r-- 1 root root 17200 Dec  1 20:00 big.go\n-rw-r--r-- 1 root root 4 Dec  1 20:00 a.txt\n")
	b.WriteString("Observation of step 3:\nreplace_text a.txt: replaced 1 occurrence at line 1. Verification debt is open.\n")
	b.WriteString("func main() {\n\tfmt.Println(\"hello, world\")\n\tif err != nil {\n\t\treturn err\n\t}\n}\n")
	return b.String()
}

// pretoken splits text as GPT-2 style tokenizers do before merging:
// words with their leading space, numbers, runs of punctuation, spaces.
var pretoken = regexp.MustCompile(`'s|'t|'re|'ve|'m|'ll|'d| ?\pL+| ?\pN+| ?[^\s\pL\pN]+|\s+`)

// learnMerges learns n byte-pair merges from text, most frequent pair
// first (ties broken by the pair's text, for determinism).
func learnMerges(text string, n int, b2u map[byte]rune) [][2]string {
	freq := map[string]int{}
	for _, w := range pretoken.FindAllString(text, -1) {
		freq[w]++
	}
	type word struct {
		syms []string
		n    int
	}
	words := make([]word, 0, len(freq))
	keys := make([]string, 0, len(freq))
	for w := range freq {
		keys = append(keys, w)
	}
	sort.Strings(keys)
	for _, w := range keys {
		syms := make([]string, len(w))
		for i := 0; i < len(w); i++ {
			syms[i] = string(b2u[w[i]])
		}
		words = append(words, word{syms, freq[w]})
	}
	var out [][2]string
	for len(out) < n {
		count := map[[2]string]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w.syms); i++ {
				count[[2]string{w.syms[i], w.syms[i+1]}] += w.n
			}
		}
		var best [2]string
		bestN := 0
		for p, c := range count {
			if c > bestN || (c == bestN && p[0]+" "+p[1] < best[0]+" "+best[1]) {
				best, bestN = p, c
			}
		}
		if bestN < 2 {
			break
		}
		out = append(out, best)
		joined := best[0] + best[1]
		for wi := range words {
			s := words[wi].syms
			var ns []string
			for i := 0; i < len(s); i++ {
				if i+1 < len(s) && s[i] == best[0] && s[i+1] == best[1] {
					ns = append(ns, joined)
					i++
					continue
				}
				ns = append(ns, s[i])
			}
			words[wi].syms = ns
		}
	}
	return out
}

// byteToUnicode is GPT-2's byte-level map: printable bytes stand for
// themselves, the others (space, newline, control bytes) for code points
// from U+0100 on.
func byteToUnicode() map[byte]rune {
	m := map[byte]rune{}
	next := rune(256)
	for b := range 256 {
		c := byte(b)
		if (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE {
			m[c] = rune(c)
			continue
		}
		m[c] = next
		next++
	}
	return m
}
