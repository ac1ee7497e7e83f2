package main

import (
	"strconv"
	"time"

	"github.com/art-runtime/art/internal/systest"
	"github.com/rogpeppe/go-internal/testscript"
)

// withArg returns the pids of processes (other than this one) that have
// arg as one whole argument.
func withArg(ts *testscript.TestScript, arg string) []int {
	pids, err := systest.PidsWithArg(arg)
	ts.Check(err)
	return pids
}

// procs ARG N: wait (up to 30 s) until at least N processes have ARG as
// an argument. ! procs ARG: wait (up to 10 s) until none has, and fail
// naming the survivors otherwise.
func procs(ts *testscript.TestScript, neg bool, args []string) {
	if neg && len(args) == 1 {
		deadline := time.Now().Add(10 * time.Second)
		for {
			left := withArg(ts, args[0])
			if len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				ts.Fatalf("processes with argument %s survive: %v", args[0], left)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: procs ARG N | ! procs ARG")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	deadline := time.Now().Add(30 * time.Second)
	for len(withArg(ts, args[0])) < n {
		if time.Now().After(deadline) {
			ts.Fatalf("%d processes with argument %s after 30s; want %d", len(withArg(ts, args[0])), args[0], n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
