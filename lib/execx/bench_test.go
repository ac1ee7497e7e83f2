package execx

import (
	"context"
	"io"
	"os/exec"
	"testing"
)

// BenchmarkRunTrue is the per-command cost of Run for /bin/true in each
// mode (-stderr: with a separate stderr pipe); BenchmarkRawSpawn (os/exec, nothing else) is the baseline to
// divide by.
func BenchmarkRunTrue(b *testing.B) {
	cases := []struct {
		name string
		iso  Isolation
		opt  Options
	}{
		{"none", IsolationNone, Options{}},
		{"none-stderr", IsolationNone, Options{Stderr: io.Discard}},
		{"none-supervised", IsolationNone, Options{Supervised: true}},
		{"none-supervised-stderr", IsolationNone, Options{Supervised: true, Stderr: io.Discard}},
		{"landlock", IsolationLandlock, Options{}},
		{"strict", IsolationStrict, Options{}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if c.iso != IsolationNone && landlockABI() == 0 {
				b.Skip("no Landlock")
			}
			p := policyFor(b, c.iso, "true")
			task := NewTask("true")
			for b.Loop() {
				res, err := Run(context.Background(), p, task, c.opt)
				if err != nil || res.Status != StatusSucceeded {
					b.Fatalf("Run = %v, %v", res, err)
				}
			}
		})
	}
}

func BenchmarkRawSpawn(b *testing.B) {
	path, err := exec.LookPath("true")
	if err != nil {
		b.Skip(err)
	}
	for b.Loop() {
		if err := exec.Command(path).Run(); err != nil {
			b.Fatal(err)
		}
	}
}
