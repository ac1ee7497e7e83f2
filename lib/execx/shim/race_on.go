//go:build race

package shim

// Env is the shim's own environment. A race-enabled binary (tests)
// sleeps a second at exit by default (ThreadSanitizer's atexit_sleep_ms);
// the supervisor shim exits after every task, so turn that off.
var Env = []string{"GOMAXPROCS=1", "GORACE=atexit_sleep_ms=0"}
