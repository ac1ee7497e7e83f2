//go:build linux && (arm64 || riscv64 || loong64)

package compile

// Architectures of the generic syscall table have only the *at forms.
var (
	modeArg1Calls []uintptr
	openCall      uintptr
)
