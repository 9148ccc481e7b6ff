#include "textflag.h"

// The vector rows of a sweep; see kernel_amd64.go. Both functions sum
// each point as sweepRowGo does: xm (c[i]) + xp (c[i+2]) + ym + yp + zm +
// zp + x0 (c[i+1]), left to right, then multiply by w; the running sum
// is the first operand of each instruction, as in the compiled
// sweepRowGo (this only decides which of two NaNs comes out). Loads are unaligned (a row starts at any point).
//
// Registers: DI out, SI c, R8 ym, R9 yp, R10 zm, R11 zp, CX len(out),
// AX the index i, X7/Y7 the weight in every lane.

// func sweepRowSSE2(out, c, ym, yp, zm, zp []float64, w float64)
// Two points per step; len(out) is a multiple of 2. SSE2 arithmetic on a
// memory operand would require it aligned, so every row is loaded first.
TEXT ·sweepRowSSE2(SB), NOSPLIT, $0-152
	MOVQ   out_base+0(FP), DI
	MOVQ   out_len+8(FP), CX
	MOVQ   c_base+24(FP), SI
	MOVQ   ym_base+48(FP), R8
	MOVQ   yp_base+72(FP), R9
	MOVQ   zm_base+96(FP), R10
	MOVQ   zp_base+120(FP), R11
	MOVSD  w+144(FP), X7
	UNPCKLPD X7, X7                 // w in both lanes
	XORQ   AX, AX
	JMP    sse2check

sse2loop:
	MOVUPD (SI)(AX*8), X0           // xm
	MOVUPD 16(SI)(AX*8), X1         // xp
	MOVUPD (R8)(AX*8), X2           // ym
	MOVUPD (R9)(AX*8), X3           // yp
	MOVUPD (R10)(AX*8), X4          // zm
	MOVUPD (R11)(AX*8), X5          // zp
	MOVUPD 8(SI)(AX*8), X6          // x0
	ADDPD  X1, X0                   // X0 = X0 + X1, and so on
	ADDPD  X2, X0
	ADDPD  X3, X0
	ADDPD  X4, X0
	ADDPD  X5, X0
	ADDPD  X6, X0
	MULPD  X7, X0
	MOVUPD X0, (DI)(AX*8)
	ADDQ   $2, AX

sse2check:
	CMPQ AX, CX
	JB   sse2loop
	RET

// func sweepRowAVX2(out, c, ym, yp, zm, zp []float64, w float64)
// Four points per step; len(out) is a multiple of 4. VEX-encoded
// arithmetic takes unaligned memory operands; VADDPD m, Y0, Y0 is
// Y0 = Y0 + m.
TEXT ·sweepRowAVX2(SB), NOSPLIT, $0-152
	MOVQ         out_base+0(FP), DI
	MOVQ         out_len+8(FP), CX
	MOVQ         c_base+24(FP), SI
	MOVQ         ym_base+48(FP), R8
	MOVQ         yp_base+72(FP), R9
	MOVQ         zm_base+96(FP), R10
	MOVQ         zp_base+120(FP), R11
	VBROADCASTSD w+144(FP), Y7
	XORQ         AX, AX
	JMP          avx2check

avx2loop:
	VMOVUPD (SI)(AX*8), Y0          // xm
	VADDPD  16(SI)(AX*8), Y0, Y0    // + xp
	VADDPD  (R8)(AX*8), Y0, Y0      // + ym
	VADDPD  (R9)(AX*8), Y0, Y0      // + yp
	VADDPD  (R10)(AX*8), Y0, Y0     // + zm
	VADDPD  (R11)(AX*8), Y0, Y0     // + zp
	VADDPD  8(SI)(AX*8), Y0, Y0     // + x0
	VMULPD  Y7, Y0, Y0
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ    $4, AX

avx2check:
	CMPQ       AX, CX
	JB         avx2loop
	VZEROUPPER                      // no AVX-SSE transition penalty for the caller
	RET
