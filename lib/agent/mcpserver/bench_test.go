package mcpserver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/art-runtime/art/lib/agent"
	"github.com/art-runtime/art/lib/agent/mcpserver"
	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/jsonx"
)

// BenchmarkMCPCall measures what MCP adds to a call, in process (the SDK's
// in-memory transports) and over stdio (a real server subprocess: this
// test binary), against the direct paths measured interleaved in the same
// loop: the core's own Take of the same decision (ms-protocol/call is the
// protocol's cost alone; the target is < 1 ms) and, for run_tool of
// `true`, a direct supervised execx.Run under the same policy
// (ms-over-execx/call: protocol and core together over starting the
// process). read_file has no process to hide the protocol's cost.
//
//	go test -run '^$' -bench MCPCall -benchtime 200x -count 5 ./lib/agent/mcpserver/
func BenchmarkMCPCall(b *testing.B) {
	for _, transport := range []string{"inproc", "stdio"} {
		for _, tool := range []string{"run_tool", "read_file"} {
			b.Run(transport+"/"+tool, func(b *testing.B) { benchCall(b, transport, tool) })
		}
	}
}

func benchCall(b *testing.B, transport, tool string) {
	ws := b.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte(strings.Repeat("some text\n", 100)), 0o644); err != nil {
		b.Fatal(err)
	}
	cfg := agent.Config{Workspace: ws, Allow: []string{"true"}, Verify: []string{"true"}, MaxSteps: 1 << 30}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	var cs *mcp.ClientSession
	var err error
	switch transport {
	case "inproc":
		core, err := agent.NewCore(cfg, agent.Options{})
		if err != nil {
			b.Fatal(err)
		}
		st, ct := mcp.NewInMemoryTransports()
		done := make(chan struct{})
		go func() {
			defer close(done)
			mcpserver.New(core, mcpserver.Options{}).Serve(ctx, st)
		}()
		defer func() { cancel(); <-done }()
		cs, err = client.Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
	case "stdio":
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), stdioServerEnv+"="+ws)
		cs, err = client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
	}
	defer cs.Close()

	// The direct path.
	direct, err := agent.NewCore(cfg, agent.Options{})
	if err != nil {
		b.Fatal(err)
	}
	pol := &execx.Policy{TypeMeta: jsonx.Meta(execx.KindPolicy), Allow: []string{"true"}, Workspace: direct.Root()}
	pol.Default()
	task := execx.NewTask("true")
	params := &mcp.CallToolParams{Name: "run_tool", Arguments: map[string]any{"program": "true", "args": []string{}}}
	directCall := func() {
		if _, err := execx.Run(ctx, pol, task, execx.Options{Supervised: true}); err != nil {
			b.Fatal(err)
		}
	}
	move := agent.Move{Reply: `{"action":"run_tool","program":"true"}`}
	if tool == "read_file" {
		params = &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}}
		move = agent.Move{Reply: `{"action":"read_file","path":"a.txt"}`}
		directCall = func() {}
	}
	coreCall := func() {
		if _, err := direct.Take(ctx, move); err != nil {
			b.Fatal(err)
		}
	}
	mcpCall := func() {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", tool, err, res)
		}
	}
	for range 5 { // warm up every path
		mcpCall()
		coreCall()
		directCall()
	}
	b.ResetTimer()
	var viaMCP, viaCore, viaDirect time.Duration
	for range b.N {
		t0 := time.Now()
		mcpCall()
		t1 := time.Now()
		coreCall()
		t2 := time.Now()
		directCall()
		viaMCP += t1.Sub(t0)
		viaCore += t2.Sub(t1)
		viaDirect += time.Since(t2)
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) / 1e6 }
	b.ReportMetric(per(viaMCP), "ms/call")
	b.ReportMetric(per(viaCore), "ms/core")
	b.ReportMetric(per(viaMCP)-per(viaCore), "ms-protocol/call")
	if tool == "run_tool" {
		b.ReportMetric(per(viaDirect), "ms/execx")
		b.ReportMetric(per(viaMCP)-per(viaDirect), "ms-over-execx/call")
	}
}
