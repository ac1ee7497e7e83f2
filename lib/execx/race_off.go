//go:build !race

package execx

// shimEnv is the shim's own environment. The task's environment travels
// in the spec; the shim only waits, and with one P the runtime does not
// spin idle threads looking for work.
var shimEnv = []string{"GOMAXPROCS=1"}
