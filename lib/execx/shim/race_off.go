//go:build !race

package shim

// Env is the shim's own environment. The task's environment travels
// in the spec; the shim only waits, and with one P the runtime does not
// spin idle threads looking for work.
var Env = []string{"GOMAXPROCS=1"}
