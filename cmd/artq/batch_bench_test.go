package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/art-runtime/art/internal/cli"
)

// BenchmarkEnqueueBatchCLI: `artq enqueue --batch` of 100,000 Task
// manifests, in-process: decoding, one fsync'd append, and the output.
func BenchmarkEnqueueBatchCLI(b *testing.B) {
	var in strings.Builder
	for range 100000 {
		in.WriteString(`{"apiVersion":"art/v1alpha1","kind":"Task","program":"make","args":["-C","src","test"]}` + "\n")
	}
	for b.Loop() {
		dir := filepath.Join(b.TempDir(), "q")
		var out, errb bytes.Buffer
		std := cli.IO{In: strings.NewReader(in.String()), Out: &out, Err: &errb}
		if code := artq(context.Background(), std, "--dir", dir, "enqueue", "--batch", "-o", "text"); code != 0 {
			b.Fatalf("exit %d: %s", code, errb.String())
		}
	}
	b.ReportMetric(float64(100000*b.N)/b.Elapsed().Seconds(), "tasks/s")
}
