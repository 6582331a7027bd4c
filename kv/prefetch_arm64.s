#include "textflag.h"

// func prefetch(addr uintptr): PRFM PSTL1KEEP, a hint that never faults.
TEXT ·prefetch(SB),NOSPLIT|NOFRAME,$0-8
	MOVD addr+0(FP), R0
	PRFM (R0), PSTL1KEEP
	RET
