#include "textflag.h"

// func handlerAddr() uintptr
TEXT ·handlerAddr(SB),NOSPLIT,$0-8
	LEAQ handler<>(SB), AX
	MOVQ AX, ret+0(FP)
	RET

// func restorerAddr() uintptr
TEXT ·restorerAddr(SB),NOSPLIT,$0-8
	LEAQ restorer<>(SB), AX
	MOVQ AX, ret+0(FP)
	RET

// handler is the signal handler (the C ABI: the signal number in DI). It
// writes that number as one byte to pipeW and returns; it touches no Go
// state, so it is safe on any thread at any moment. The kernel saves and
// restores every register around it; a full pipe (EAGAIN) drops the byte.
TEXT handler<>(SB),NOSPLIT|NOFRAME,$0
	SUBQ	$16, SP
	MOVB	DI, 0(SP)
	MOVQ	·pipeW(SB), DI
	MOVQ	SP, SI
	MOVQ	$1, DX
	MOVQ	$1, AX // write
	SYSCALL
	ADDQ	$16, SP
	RET

// restorer returns from the handler to the interrupted code.
TEXT restorer<>(SB),NOSPLIT|NOFRAME,$0
	MOVQ	$15, AX // rt_sigreturn
	SYSCALL
	INT	$3
