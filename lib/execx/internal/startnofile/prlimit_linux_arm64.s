#include "textflag.h"

// func prlimitNofile(lim *[2]uint64) int
TEXT ·prlimitNofile(SB),NOSPLIT,$0-16
	MOVD	$0, R0          // pid: this process
	MOVD	$7, R1          // RLIMIT_NOFILE
	MOVD	$0, R2          // no new limit
	MOVD	lim+0(FP), R3   // the old one, here
	MOVD	$261, R8        // SYS_prlimit64
	SVC
	MOVD	R0, ret+8(FP)
	RET
