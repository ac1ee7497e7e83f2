package obs

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zricethezav/gitleaks/v8/detect"
)

// benchLines are Drafts shaped like the events art tools emit: task
// start/finish records with limits, result counters and an isolation report,
// a queue record with a manifest, an agent step with an observation, and
// one in eight carrying a secret to find.
func benchLines() [][]byte {
	var out [][]byte
	for i := range 64 {
		var d string
		switch i % 4 {
		case 0:
			d = fmt.Sprintf(`{"apiVersion":"art/v1alpha1","kind":"Draft","subject":"task/%06d","type":"task.started","time":"2024-05-01T12:00:00.%09dZ","role":"runtime","correlation":"queue/default","attrs":{"program":"go","argc":3,"dir":"svc/api","context_files":1,"env_allow":["PATH","HOME","GOFLAGS"],"env_set":["CGO_ENABLED"],"limits":{"timeout":"10m0s","kill_after":"5s","output_bytes":1048576,"memory_bytes":4294967296},"isolation":"landlock","task_id":"task-%06d"}}`, i, i, i)
		case 1:
			d = fmt.Sprintf(`{"apiVersion":"art/v1alpha1","kind":"Draft","subject":"task/%06d","type":"task.finished","time":"2024-05-01T12:00:01.%09dZ","role":"runtime","attrs":{"program":"go","status":"failed","exit_code":1,"timed_out":false,"cancelled":false,"duration_ms":48213,"output_bytes":20931,"output_truncated":false,"output_incomplete":false,"isolation":{"backend":"landlock","enforced":["fs","net","scope"]},"rusage":{"user_ms":91234,"sys_ms":8123,"max_rss_kb":412332},"error":{"class":"failed","exit_code":1,"message":"exit status 1: FAIL github.com/acme/api/internal/store 12.031s"}}}`, i, i)
		case 2:
			d = fmt.Sprintf(`{"apiVersion":"art/v1alpha1","kind":"Draft","subject":"task/%06d","type":"queue.enqueued","time":"2024-05-01T12:00:02Z","role":"dispatcher","attrs":{"seq":%d,"type":"enqueued","task":"task-%06d","max_attempts":3,"manifest":{"program":"curl","args":["-fsS","--retry","3","https://api.example.com/v1/items?page=2&limit=50"],"dir":".","limits":{"timeout":"30s"}}}}`, i, i, i)
		case 3:
			obs := "ok  \tgithub.com/acme/api\t0.412s\nok  \tgithub.com/acme/api/internal/store\t1.093s"
			if i%8 == 7 {
				obs = "export GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345 && go test ./..."
			}
			b, _ := json.Marshal(obs)
			d = fmt.Sprintf(`{"apiVersion":"art/v1alpha1","kind":"Draft","subject":"agent/run-%d","type":"agent.observation","time":"2024-05-01T12:00:03Z","role":"brain","attrs":{"step":%d,"observation":%s,"exit_code":0,"elided":0,"usage":{"input_tokens":1834,"output_tokens":211}}}`, i%3, i, b)
		}
		out = append(out, []byte(d))
	}
	return out
}

// perSecond reports throughput per wall second and per CPU second of the
// whole process (user+system, GC included). On a shared machine the wall
// figure moves with the neighbours' load; the CPU figure much less.
func perSecond(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "drafts/s")
	if used := cpuTime() - cpu0; used > 0 {
		b.ReportMetric(float64(b.N)/used.Seconds(), "drafts/cpu-s")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRedact: decode a Draft line, redact it and seal the envelope
// (canonical JSON and its SHA-256): everything but the sink.
func BenchmarkRedact(b *testing.B) {
	lines := benchLines()
	e := New(Options{})
	b.ReportAllocs()
	cpu0 := cpuTime()
	i := 0
	for b.Loop() {
		d, err := DecodeDraft(lines[i%len(lines)])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.Seal(*d, 1); err != nil {
			b.Fatal(err)
		}
		i++
	}
	perSecond(b, cpu0)
}

// BenchmarkJSONRoundTrip is the baseline: encoding/json decodes the same
// line into a map and encodes it again, with no checks and no redaction.
func BenchmarkJSONRoundTrip(b *testing.B) {
	lines := benchLines()
	b.ReportAllocs()
	cpu0 := cpuTime()
	i := 0
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(lines[i%len(lines)], &m); err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(m); err != nil {
			b.Fatal(err)
		}
		i++
	}
	perSecond(b, cpu0)
}

// BenchmarkRedactValues redacts Go values (the adapters' path: no JSON
// decoding).
func BenchmarkRedactValues(b *testing.B) {
	var drafts []Draft
	for _, l := range benchLines() {
		d, _ := DecodeDraft(l)
		drafts = append(drafts, *d)
	}
	e := New(Options{})
	b.ReportAllocs()
	cpu0 := cpuTime()
	i := 0
	for b.Loop() {
		if _, err := e.Seal(drafts[i%len(drafts)], 1); err != nil {
			b.Fatal(err)
		}
		i++
	}
	perSecond(b, cpu0)
}

// BenchmarkEmitJSONL: decode, redact, sequence and append to a JSONL file
// (flock, catch-up check, one write) without fsync, from one goroutine.
func BenchmarkEmitJSONL(b *testing.B) {
	benchEmit(b, false, 1)
}

// BenchmarkEmitJSONLBatch64: the same as artobs emit does when lines
// arrive faster than one at a time: batches of 64, one lock and one write
// per batch.
func BenchmarkEmitJSONLBatch64(b *testing.B) {
	lines := benchLines()
	path := filepath.Join(b.TempDir(), "events.jsonl")
	j, err := OpenJSONL(path, JSONLOptions{})
	if err != nil {
		b.Fatal(err)
	}
	e := New(Options{}, j)
	defer e.Close()
	ctx := context.Background()
	b.ReportAllocs()
	cpu0 := cpuTime()
	batch := make([]Draft, 0, 64)
	i := 0
	for b.Loop() {
		d, err := DecodeDraft(lines[i%len(lines)])
		if err != nil {
			b.Fatal(err)
		}
		batch = append(batch, *d)
		if len(batch) == cap(batch) {
			for _, del := range e.EmitBatch(ctx, batch) {
				if del.Err != nil {
					b.Fatal(del.Err)
				}
			}
			batch = batch[:0]
		}
		i++
	}
	e.EmitBatch(ctx, batch)
	perSecond(b, cpu0)
}

// BenchmarkEmitJSONLSync: the same with an fsync per record, one writer:
// every record waits for its own fsync.
func BenchmarkEmitJSONLSync(b *testing.B) {
	benchEmit(b, true, 1)
}

// BenchmarkEmitJSONLSyncParallel64: 64 goroutines emitting with --sync
// share fsyncs (group commit).
func BenchmarkEmitJSONLSyncParallel64(b *testing.B) {
	benchEmit(b, true, 64)
}

func benchEmit(b *testing.B, syncEach bool, writers int) {
	lines := benchLines()
	path := filepath.Join(b.TempDir(), "events.jsonl")
	j, err := OpenJSONL(path, JSONLOptions{Sync: syncEach})
	if err != nil {
		b.Fatal(err)
	}
	e := New(Options{}, j)
	defer e.Close()
	ctx := context.Background()
	b.ReportAllocs()
	cpu0 := cpuTime()
	if writers == 1 {
		i := 0
		for b.Loop() {
			d, err := DecodeDraft(lines[i%len(lines)])
			if err != nil {
				b.Fatal(err)
			}
			if del := e.Emit(ctx, *d); del.Err != nil {
				b.Fatal(del.Err)
			}
			i++
		}
	} else {
		var n atomic.Int64
		b.SetParallelism((writers + 1) / 2) // × GOMAXPROCS goroutines
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := n.Add(1)
				d, err := DecodeDraft(lines[int(i)%len(lines)])
				if err != nil {
					b.Error(err)
					return
				}
				if del := e.Emit(ctx, *d); del.Err != nil {
					b.Error(del.Err)
					return
				}
			}
		})
	}
	perSecond(b, cpu0)
	if syncEach {
		b.ReportMetric(float64(b.N)/float64(max(1, j.log.Syncs())), "records/fsync")
	}
}

// BenchmarkGitleaksDetect is the peer: gitleaks' own detector (default
// configuration, keyword prefilter) over the same Draft lines, finding
// without redacting, decoding or writing anything.
func BenchmarkGitleaksDetect(b *testing.B) {
	lines := benchLines()
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	i := 0
	for b.Loop() {
		d.DetectBytes(lines[i%len(lines)])
		i++
	}
	perSecond(b, cpu0)
}
