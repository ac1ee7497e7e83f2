//go:build !race

package execx

// shimEnv is the shim's own environment: nothing. The task's environment
// travels in the spec; the shim reads no variables.
var shimEnv = []string{}
