#include "textflag.h"

// The AVX-512 and AVX2 passes of the pair kernel (see kernel_amd64.go). Every lane
// performs the operations of the Go code (kernel.go) in the same order,
// each rounded once: no fused multiply-add, no reassociation.

// maskOfCount[r] has the low r bits set (r = 0 to 8).
DATA maskOfCount<>+0(SB)/1, $0x00
DATA maskOfCount<>+1(SB)/1, $0x01
DATA maskOfCount<>+2(SB)/1, $0x03
DATA maskOfCount<>+3(SB)/1, $0x07
DATA maskOfCount<>+4(SB)/1, $0x0f
DATA maskOfCount<>+5(SB)/1, $0x1f
DATA maskOfCount<>+6(SB)/1, $0x3f
DATA maskOfCount<>+7(SB)/1, $0x7f
DATA maskOfCount<>+8(SB)/1, $0xff
GLOBL maskOfCount<>(SB), RODATA|NOPTR, $9

// laneOffsets holds 0 to 7 as int32.
DATA laneOffsets<>+0(SB)/4, $0
DATA laneOffsets<>+4(SB)/4, $1
DATA laneOffsets<>+8(SB)/4, $2
DATA laneOffsets<>+12(SB)/4, $3
DATA laneOffsets<>+16(SB)/4, $4
DATA laneOffsets<>+20(SB)/4, $5
DATA laneOffsets<>+24(SB)/4, $6
DATA laneOffsets<>+28(SB)/4, $7
GLOBL laneOffsets<>(SB), RODATA|NOPTR, $32

// compress holds two tables of 16 entries of 32 bytes, one per 4-bit mask
// m: at 32m the VPERMD indices that move the doubles of the lanes set in
// m, in order, to the low lanes, and at 512 + 32m those that do so for
// int32.
DATA compress<>+0(SB)/4, $0
DATA compress<>+4(SB)/4, $0
DATA compress<>+8(SB)/4, $0
DATA compress<>+12(SB)/4, $0
DATA compress<>+16(SB)/4, $0
DATA compress<>+20(SB)/4, $0
DATA compress<>+24(SB)/4, $0
DATA compress<>+28(SB)/4, $0
DATA compress<>+32(SB)/4, $0
DATA compress<>+36(SB)/4, $1
DATA compress<>+40(SB)/4, $0
DATA compress<>+44(SB)/4, $0
DATA compress<>+48(SB)/4, $0
DATA compress<>+52(SB)/4, $0
DATA compress<>+56(SB)/4, $0
DATA compress<>+60(SB)/4, $0
DATA compress<>+64(SB)/4, $2
DATA compress<>+68(SB)/4, $3
DATA compress<>+72(SB)/4, $0
DATA compress<>+76(SB)/4, $0
DATA compress<>+80(SB)/4, $0
DATA compress<>+84(SB)/4, $0
DATA compress<>+88(SB)/4, $0
DATA compress<>+92(SB)/4, $0
DATA compress<>+96(SB)/4, $0
DATA compress<>+100(SB)/4, $1
DATA compress<>+104(SB)/4, $2
DATA compress<>+108(SB)/4, $3
DATA compress<>+112(SB)/4, $0
DATA compress<>+116(SB)/4, $0
DATA compress<>+120(SB)/4, $0
DATA compress<>+124(SB)/4, $0
DATA compress<>+128(SB)/4, $4
DATA compress<>+132(SB)/4, $5
DATA compress<>+136(SB)/4, $0
DATA compress<>+140(SB)/4, $0
DATA compress<>+144(SB)/4, $0
DATA compress<>+148(SB)/4, $0
DATA compress<>+152(SB)/4, $0
DATA compress<>+156(SB)/4, $0
DATA compress<>+160(SB)/4, $0
DATA compress<>+164(SB)/4, $1
DATA compress<>+168(SB)/4, $4
DATA compress<>+172(SB)/4, $5
DATA compress<>+176(SB)/4, $0
DATA compress<>+180(SB)/4, $0
DATA compress<>+184(SB)/4, $0
DATA compress<>+188(SB)/4, $0
DATA compress<>+192(SB)/4, $2
DATA compress<>+196(SB)/4, $3
DATA compress<>+200(SB)/4, $4
DATA compress<>+204(SB)/4, $5
DATA compress<>+208(SB)/4, $0
DATA compress<>+212(SB)/4, $0
DATA compress<>+216(SB)/4, $0
DATA compress<>+220(SB)/4, $0
DATA compress<>+224(SB)/4, $0
DATA compress<>+228(SB)/4, $1
DATA compress<>+232(SB)/4, $2
DATA compress<>+236(SB)/4, $3
DATA compress<>+240(SB)/4, $4
DATA compress<>+244(SB)/4, $5
DATA compress<>+248(SB)/4, $0
DATA compress<>+252(SB)/4, $0
DATA compress<>+256(SB)/4, $6
DATA compress<>+260(SB)/4, $7
DATA compress<>+264(SB)/4, $0
DATA compress<>+268(SB)/4, $0
DATA compress<>+272(SB)/4, $0
DATA compress<>+276(SB)/4, $0
DATA compress<>+280(SB)/4, $0
DATA compress<>+284(SB)/4, $0
DATA compress<>+288(SB)/4, $0
DATA compress<>+292(SB)/4, $1
DATA compress<>+296(SB)/4, $6
DATA compress<>+300(SB)/4, $7
DATA compress<>+304(SB)/4, $0
DATA compress<>+308(SB)/4, $0
DATA compress<>+312(SB)/4, $0
DATA compress<>+316(SB)/4, $0
DATA compress<>+320(SB)/4, $2
DATA compress<>+324(SB)/4, $3
DATA compress<>+328(SB)/4, $6
DATA compress<>+332(SB)/4, $7
DATA compress<>+336(SB)/4, $0
DATA compress<>+340(SB)/4, $0
DATA compress<>+344(SB)/4, $0
DATA compress<>+348(SB)/4, $0
DATA compress<>+352(SB)/4, $0
DATA compress<>+356(SB)/4, $1
DATA compress<>+360(SB)/4, $2
DATA compress<>+364(SB)/4, $3
DATA compress<>+368(SB)/4, $6
DATA compress<>+372(SB)/4, $7
DATA compress<>+376(SB)/4, $0
DATA compress<>+380(SB)/4, $0
DATA compress<>+384(SB)/4, $4
DATA compress<>+388(SB)/4, $5
DATA compress<>+392(SB)/4, $6
DATA compress<>+396(SB)/4, $7
DATA compress<>+400(SB)/4, $0
DATA compress<>+404(SB)/4, $0
DATA compress<>+408(SB)/4, $0
DATA compress<>+412(SB)/4, $0
DATA compress<>+416(SB)/4, $0
DATA compress<>+420(SB)/4, $1
DATA compress<>+424(SB)/4, $4
DATA compress<>+428(SB)/4, $5
DATA compress<>+432(SB)/4, $6
DATA compress<>+436(SB)/4, $7
DATA compress<>+440(SB)/4, $0
DATA compress<>+444(SB)/4, $0
DATA compress<>+448(SB)/4, $2
DATA compress<>+452(SB)/4, $3
DATA compress<>+456(SB)/4, $4
DATA compress<>+460(SB)/4, $5
DATA compress<>+464(SB)/4, $6
DATA compress<>+468(SB)/4, $7
DATA compress<>+472(SB)/4, $0
DATA compress<>+476(SB)/4, $0
DATA compress<>+480(SB)/4, $0
DATA compress<>+484(SB)/4, $1
DATA compress<>+488(SB)/4, $2
DATA compress<>+492(SB)/4, $3
DATA compress<>+496(SB)/4, $4
DATA compress<>+500(SB)/4, $5
DATA compress<>+504(SB)/4, $6
DATA compress<>+508(SB)/4, $7
DATA compress<>+512(SB)/4, $0
DATA compress<>+516(SB)/4, $0
DATA compress<>+520(SB)/4, $0
DATA compress<>+524(SB)/4, $0
DATA compress<>+528(SB)/4, $0
DATA compress<>+532(SB)/4, $0
DATA compress<>+536(SB)/4, $0
DATA compress<>+540(SB)/4, $0
DATA compress<>+544(SB)/4, $0
DATA compress<>+548(SB)/4, $0
DATA compress<>+552(SB)/4, $0
DATA compress<>+556(SB)/4, $0
DATA compress<>+560(SB)/4, $0
DATA compress<>+564(SB)/4, $0
DATA compress<>+568(SB)/4, $0
DATA compress<>+572(SB)/4, $0
DATA compress<>+576(SB)/4, $1
DATA compress<>+580(SB)/4, $0
DATA compress<>+584(SB)/4, $0
DATA compress<>+588(SB)/4, $0
DATA compress<>+592(SB)/4, $0
DATA compress<>+596(SB)/4, $0
DATA compress<>+600(SB)/4, $0
DATA compress<>+604(SB)/4, $0
DATA compress<>+608(SB)/4, $0
DATA compress<>+612(SB)/4, $1
DATA compress<>+616(SB)/4, $0
DATA compress<>+620(SB)/4, $0
DATA compress<>+624(SB)/4, $0
DATA compress<>+628(SB)/4, $0
DATA compress<>+632(SB)/4, $0
DATA compress<>+636(SB)/4, $0
DATA compress<>+640(SB)/4, $2
DATA compress<>+644(SB)/4, $0
DATA compress<>+648(SB)/4, $0
DATA compress<>+652(SB)/4, $0
DATA compress<>+656(SB)/4, $0
DATA compress<>+660(SB)/4, $0
DATA compress<>+664(SB)/4, $0
DATA compress<>+668(SB)/4, $0
DATA compress<>+672(SB)/4, $0
DATA compress<>+676(SB)/4, $2
DATA compress<>+680(SB)/4, $0
DATA compress<>+684(SB)/4, $0
DATA compress<>+688(SB)/4, $0
DATA compress<>+692(SB)/4, $0
DATA compress<>+696(SB)/4, $0
DATA compress<>+700(SB)/4, $0
DATA compress<>+704(SB)/4, $1
DATA compress<>+708(SB)/4, $2
DATA compress<>+712(SB)/4, $0
DATA compress<>+716(SB)/4, $0
DATA compress<>+720(SB)/4, $0
DATA compress<>+724(SB)/4, $0
DATA compress<>+728(SB)/4, $0
DATA compress<>+732(SB)/4, $0
DATA compress<>+736(SB)/4, $0
DATA compress<>+740(SB)/4, $1
DATA compress<>+744(SB)/4, $2
DATA compress<>+748(SB)/4, $0
DATA compress<>+752(SB)/4, $0
DATA compress<>+756(SB)/4, $0
DATA compress<>+760(SB)/4, $0
DATA compress<>+764(SB)/4, $0
DATA compress<>+768(SB)/4, $3
DATA compress<>+772(SB)/4, $0
DATA compress<>+776(SB)/4, $0
DATA compress<>+780(SB)/4, $0
DATA compress<>+784(SB)/4, $0
DATA compress<>+788(SB)/4, $0
DATA compress<>+792(SB)/4, $0
DATA compress<>+796(SB)/4, $0
DATA compress<>+800(SB)/4, $0
DATA compress<>+804(SB)/4, $3
DATA compress<>+808(SB)/4, $0
DATA compress<>+812(SB)/4, $0
DATA compress<>+816(SB)/4, $0
DATA compress<>+820(SB)/4, $0
DATA compress<>+824(SB)/4, $0
DATA compress<>+828(SB)/4, $0
DATA compress<>+832(SB)/4, $1
DATA compress<>+836(SB)/4, $3
DATA compress<>+840(SB)/4, $0
DATA compress<>+844(SB)/4, $0
DATA compress<>+848(SB)/4, $0
DATA compress<>+852(SB)/4, $0
DATA compress<>+856(SB)/4, $0
DATA compress<>+860(SB)/4, $0
DATA compress<>+864(SB)/4, $0
DATA compress<>+868(SB)/4, $1
DATA compress<>+872(SB)/4, $3
DATA compress<>+876(SB)/4, $0
DATA compress<>+880(SB)/4, $0
DATA compress<>+884(SB)/4, $0
DATA compress<>+888(SB)/4, $0
DATA compress<>+892(SB)/4, $0
DATA compress<>+896(SB)/4, $2
DATA compress<>+900(SB)/4, $3
DATA compress<>+904(SB)/4, $0
DATA compress<>+908(SB)/4, $0
DATA compress<>+912(SB)/4, $0
DATA compress<>+916(SB)/4, $0
DATA compress<>+920(SB)/4, $0
DATA compress<>+924(SB)/4, $0
DATA compress<>+928(SB)/4, $0
DATA compress<>+932(SB)/4, $2
DATA compress<>+936(SB)/4, $3
DATA compress<>+940(SB)/4, $0
DATA compress<>+944(SB)/4, $0
DATA compress<>+948(SB)/4, $0
DATA compress<>+952(SB)/4, $0
DATA compress<>+956(SB)/4, $0
DATA compress<>+960(SB)/4, $1
DATA compress<>+964(SB)/4, $2
DATA compress<>+968(SB)/4, $3
DATA compress<>+972(SB)/4, $0
DATA compress<>+976(SB)/4, $0
DATA compress<>+980(SB)/4, $0
DATA compress<>+984(SB)/4, $0
DATA compress<>+988(SB)/4, $0
DATA compress<>+992(SB)/4, $0
DATA compress<>+996(SB)/4, $1
DATA compress<>+1000(SB)/4, $2
DATA compress<>+1004(SB)/4, $3
DATA compress<>+1008(SB)/4, $0
DATA compress<>+1012(SB)/4, $0
DATA compress<>+1016(SB)/4, $0
DATA compress<>+1020(SB)/4, $0
GLOBL compress<>(SB), RODATA|NOPTR, $1024

// loadMask[r] (32 bytes) has its low r 64-bit lanes set (r = 0 to 4).
DATA loadMask<>+0(SB)/8, $0
DATA loadMask<>+8(SB)/8, $0
DATA loadMask<>+16(SB)/8, $0
DATA loadMask<>+24(SB)/8, $0
DATA loadMask<>+32(SB)/8, $-1
DATA loadMask<>+40(SB)/8, $0
DATA loadMask<>+48(SB)/8, $0
DATA loadMask<>+56(SB)/8, $0
DATA loadMask<>+64(SB)/8, $-1
DATA loadMask<>+72(SB)/8, $-1
DATA loadMask<>+80(SB)/8, $0
DATA loadMask<>+88(SB)/8, $0
DATA loadMask<>+96(SB)/8, $-1
DATA loadMask<>+104(SB)/8, $-1
DATA loadMask<>+112(SB)/8, $-1
DATA loadMask<>+120(SB)/8, $0
DATA loadMask<>+128(SB)/8, $-1
DATA loadMask<>+136(SB)/8, $-1
DATA loadMask<>+144(SB)/8, $-1
DATA loadMask<>+152(SB)/8, $-1
GLOBL loadMask<>(SB), RODATA|NOPTR, $160

// func cpuid(leaf, subleaf uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL subleaf+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func xgetbv0() (lo, hi uint32)
TEXT ·xgetbv0(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, lo+0(FP)
	MOVL DX, hi+4(FP)
	RET

// func selectAVX512(a *[3]float64, b *soaView, start, end int, sel *selection, n int, k *kernelConstants) int
//
// For j in [start, end): s = a − b[j], r² = (sx·sx + sy·sy) + sz·sz; the
// pairs with 1 < r² < cutoff² are appended at sel[n:] (s and j). Writes
// whole vectors: sel needs 8 spare entries past the last one kept.
TEXT ·selectAVX512(SB), NOSPLIT, $0-64
	MOVQ a+0(FP), AX
	VBROADCASTSD 0(AX), Z0
	VBROADCASTSD 8(AX), Z1
	VBROADCASTSD 16(AX), Z2
	MOVQ k+48(FP), AX
	VBROADCASTSD 0(AX), Z3 // 1
	VBROADCASTSD 8(AX), Z4 // cutoff²
	MOVQ b+8(FP), AX
	MOVQ 0(AX), R8  // bx
	MOVQ 8(AX), R9  // by
	MOVQ 16(AX), R10 // bz
	MOVQ start+16(FP), CX
	MOVQ end+24(FP), BX
	MOVQ sel+32(FP), AX
	MOVQ 0(AX), R11 // sx
	MOVQ 8(AX), R12 // sy
	MOVQ 16(AX), R13 // sz
	MOVQ 24(AX), R14 // j
	MOVQ n+40(FP), DX
	LEAQ maskOfCount<>(SB), DI
	VMOVDQU32 laneOffsets<>(SB), Y20

selectLoop:
	MOVQ BX, AX
	SUBQ CX, AX
	JLE selectDone
	CMPQ AX, $8
	JLE selectCount
	MOVQ $8, AX

selectCount:
	MOVBLZX (DI)(AX*1), SI
	KMOVW SI, K3
	VMOVUPD.Z (R8)(CX*8), K3, Z5
	VMOVUPD.Z (R9)(CX*8), K3, Z6
	VMOVUPD.Z (R10)(CX*8), K3, Z7
	VSUBPD Z5, Z0, Z5 // sx = ax − bx
	VSUBPD Z6, Z1, Z6
	VSUBPD Z7, Z2, Z7
	VMULPD Z5, Z5, Z8
	VMULPD Z6, Z6, Z9
	VADDPD Z9, Z8, Z8
	VMULPD Z7, Z7, Z9
	VADDPD Z9, Z8, Z8 // r²
	VCMPPD $0x1e, Z3, Z8, K3, K1 // r² > 1 (ordered)
	VCMPPD $0x11, Z4, Z8, K1, K1 // r² < cutoff² (ordered)
	VCOMPRESSPD Z5, K1, Z10
	VMOVUPD Z10, (R11)(DX*8)
	VCOMPRESSPD Z6, K1, Z11
	VMOVUPD Z11, (R12)(DX*8)
	VCOMPRESSPD Z7, K1, Z12
	VMOVUPD Z12, (R13)(DX*8)
	VPBROADCASTD CX, Y21
	VPADDD Y20, Y21, Y21
	VPCOMPRESSD Y21, K1, Y22
	VMOVDQU32 Y22, (R14)(DX*4)
	KMOVW K1, SI
	POPCNTL SI, SI
	ADDQ SI, DX
	ADDQ $8, CX
	JMP selectLoop

selectDone:
	MOVQ DX, ret+56(FP)
	VZEROUPPER
	RET

// func termsAVX512(sel *selection, n int, out *pairTerms, withEnergy bool, k *kernelConstants)
//
// For each selected pair: r² as above, r² ·= 1e-20, r⁶ = (r²·r²)·r²,
// r¹² = r⁶·r⁶, f = 12A/r¹² − 6B/r⁶, scale = (f/r²)·1e-10, p = s·scale,
// and with energy e = A/r¹² − B/r⁶. Works on whole vectors: sel and out
// need up to 7 entries past n.
TEXT ·termsAVX512(SB), NOSPLIT, $0-40
	MOVQ sel+0(FP), AX
	MOVQ 0(AX), SI
	MOVQ 8(AX), DI
	MOVQ 16(AX), R8
	MOVQ n+8(FP), CX
	MOVQ out+16(FP), AX
	MOVQ 0(AX), R9
	MOVQ 8(AX), R10
	MOVQ 16(AX), R11
	MOVQ 24(AX), R12
	MOVBLZX withEnergy+24(FP), DX
	MOVQ k+32(FP), AX
	VBROADCASTSD 16(AX), Z24 // 12A
	VBROADCASTSD 24(AX), Z25 // 6B
	VBROADCASTSD 32(AX), Z26 // A
	VBROADCASTSD 40(AX), Z27 // B
	VBROADCASTSD 48(AX), Z28 // 1e-20
	VBROADCASTSD 56(AX), Z29 // 1e-10
	XORQ BX, BX

termsLoop:
	CMPQ BX, CX
	JGE termsDone
	VMOVUPD (SI)(BX*8), Z0
	VMOVUPD (DI)(BX*8), Z1
	VMOVUPD (R8)(BX*8), Z2
	VMULPD Z0, Z0, Z3
	VMULPD Z1, Z1, Z4
	VADDPD Z4, Z3, Z3
	VMULPD Z2, Z2, Z4
	VADDPD Z4, Z3, Z3 // r²
	VMULPD Z28, Z3, Z3 // r² · 1e-20
	VMULPD Z3, Z3, Z4
	VMULPD Z3, Z4, Z4 // r⁶
	VMULPD Z4, Z4, Z5 // r¹²
	VDIVPD Z5, Z24, Z6 // 12A/r¹²
	VDIVPD Z4, Z25, Z7 // 6B/r⁶
	VSUBPD Z7, Z6, Z6 // f
	VDIVPD Z3, Z6, Z6 // f/r²
	VMULPD Z29, Z6, Z6 // scale
	VMULPD Z6, Z0, Z0
	VMULPD Z6, Z1, Z1
	VMULPD Z6, Z2, Z2
	VMOVUPD Z0, (R9)(BX*8)
	VMOVUPD Z1, (R10)(BX*8)
	VMOVUPD Z2, (R11)(BX*8)
	TESTQ DX, DX
	JZ termsNext
	VDIVPD Z5, Z26, Z8 // A/r¹²
	VDIVPD Z4, Z27, Z9 // B/r⁶
	VSUBPD Z9, Z8, Z8
	VMOVUPD Z8, (R12)(BX*8)

termsNext:
	ADDQ $8, BX
	JMP termsLoop

termsDone:
	VZEROUPPER
	RET

// func cullAVX512(pos *[3]float64, boxes *boxesSoA, n int, k *kernelConstants) uint64
//
// Bit c of the result is set when box c (of n ≤ 64) is within reach of
// pos: with d the distance to the box per axis as outside computes it
// (x − lo below, x − hi above, 0 between), not (dx·dx + dy·dy) + dz·dz ≥
// cutoff², as the Go loop decides.
TEXT ·cullAVX512(SB), NOSPLIT, $0-40
	MOVQ pos+0(FP), AX
	VBROADCASTSD 0(AX), Z0
	VBROADCASTSD 8(AX), Z1
	VBROADCASTSD 16(AX), Z2
	MOVQ k+24(FP), AX
	VBROADCASTSD 8(AX), Z4 // cutoff²
	MOVQ boxes+8(FP), AX
	MOVQ 0(AX), R8 // lo x
	MOVQ 8(AX), R9 // lo y
	MOVQ 16(AX), R10 // lo z
	MOVQ 24(AX), R11 // hi x
	MOVQ 32(AX), R12 // hi y
	MOVQ 40(AX), R13 // hi z
	MOVQ n+16(FP), BX
	XORQ CX, CX
	XORQ DX, DX
	LEAQ maskOfCount<>(SB), DI
	VXORPD Z31, Z31, Z31

cullLoop:
	MOVQ BX, AX
	SUBQ CX, AX
	JLE cullDone
	CMPQ AX, $8
	JLE cullCount
	MOVQ $8, AX

cullCount:
	MOVBLZX (DI)(AX*1), SI
	KMOVW SI, K3

	VMOVUPD.Z (R8)(CX*8), K3, Z5
	VMOVUPD.Z (R11)(CX*8), K3, Z6
	VSUBPD Z5, Z0, Z7 // x − lo
	VSUBPD Z6, Z0, Z8 // x − hi
	VCMPPD $0x11, Z5, Z0, K1 // x < lo
	VCMPPD $0x1e, Z6, Z0, K2 // x > hi
	VMOVAPD Z31, Z10
	VMOVAPD Z8, K2, Z10
	VMOVAPD Z7, K1, Z10
	VMULPD Z10, Z10, Z10 // dx·dx

	VMOVUPD.Z (R9)(CX*8), K3, Z5
	VMOVUPD.Z (R12)(CX*8), K3, Z6
	VSUBPD Z5, Z1, Z7
	VSUBPD Z6, Z1, Z8
	VCMPPD $0x11, Z5, Z1, K1
	VCMPPD $0x1e, Z6, Z1, K2
	VMOVAPD Z31, Z11
	VMOVAPD Z8, K2, Z11
	VMOVAPD Z7, K1, Z11
	VMULPD Z11, Z11, Z11 // dy·dy

	VMOVUPD.Z (R10)(CX*8), K3, Z5
	VMOVUPD.Z (R13)(CX*8), K3, Z6
	VSUBPD Z5, Z2, Z7
	VSUBPD Z6, Z2, Z8
	VCMPPD $0x11, Z5, Z2, K1
	VCMPPD $0x1e, Z6, Z2, K2
	VMOVAPD Z31, Z12
	VMOVAPD Z8, K2, Z12
	VMOVAPD Z7, K1, Z12
	VMULPD Z12, Z12, Z12 // dz·dz

	VADDPD Z11, Z10, Z10
	VADDPD Z12, Z10, Z10
	VCMPPD $0x19, Z4, Z10, K3, K1 // not (d² ≥ cutoff²), unordered true
	KMOVW K1, SI
	SHLQ CX, SI
	ORQ SI, DX
	ADDQ $8, CX
	JMP cullLoop

cullDone:
	MOVQ DX, ret+32(FP)
	VZEROUPPER
	RET

// func accumulateAVX(out *pairTerms, sel *selection, n int, forces *soaView, f *[3]float64)
//
// For each selected pair m in order, with j its atom of b: f += p[m] and
// g[j] −= p[m], one rounding each, in the Go loop's order. The indices
// are selectAVX512's (or selectPairs'), within b. Only AVX instructions.
TEXT ·accumulateAVX(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), AX
	MOVQ 0(AX), R9
	MOVQ 8(AX), R10
	MOVQ 16(AX), R11
	MOVQ sel+8(FP), AX
	MOVQ 24(AX), R14
	MOVQ n+16(FP), CX
	MOVQ forces+24(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R12
	MOVQ 16(AX), R13
	MOVQ f+32(FP), DI
	VMOVSD 0(DI), X4
	VMOVSD 8(DI), X5
	VMOVSD 16(DI), X6
	XORQ BX, BX

accumulateLoop:
	CMPQ BX, CX
	JGE accumulateDone
	MOVLQSX (R14)(BX*4), AX
	VMOVSD (R9)(BX*8), X0
	VMOVSD (R10)(BX*8), X1
	VMOVSD (R11)(BX*8), X2
	VADDSD X0, X4, X4
	VADDSD X1, X5, X5
	VADDSD X2, X6, X6
	VMOVSD (R8)(AX*8), X3
	VSUBSD X0, X3, X3
	VMOVSD X3, (R8)(AX*8)
	VMOVSD (R12)(AX*8), X7
	VSUBSD X1, X7, X7
	VMOVSD X7, (R12)(AX*8)
	VMOVSD (R13)(AX*8), X8
	VSUBSD X2, X8, X8
	VMOVSD X8, (R13)(AX*8)
	INCQ BX
	JMP accumulateLoop

accumulateDone:
	VMOVSD X4, 0(DI)
	VMOVSD X5, 8(DI)
	VMOVSD X6, 16(DI)
	RET

// func termsAVX2(sel *selection, n int, out *pairTerms, withEnergy bool, k *kernelConstants)
//
// termsAVX512 four pairs at a time: the same operations in the same
// order. Works on whole vectors: sel and out need up to 3 entries past n.
TEXT ·termsAVX2(SB), NOSPLIT, $0-40
	MOVQ sel+0(FP), AX
	MOVQ 0(AX), SI
	MOVQ 8(AX), DI
	MOVQ 16(AX), R8
	MOVQ n+8(FP), CX
	MOVQ out+16(FP), AX
	MOVQ 0(AX), R9
	MOVQ 8(AX), R10
	MOVQ 16(AX), R11
	MOVQ 24(AX), R12
	MOVBLZX withEnergy+24(FP), DX
	MOVQ k+32(FP), AX
	VBROADCASTSD 16(AX), Y10 // 12A
	VBROADCASTSD 24(AX), Y11 // 6B
	VBROADCASTSD 32(AX), Y12 // A
	VBROADCASTSD 40(AX), Y13 // B
	VBROADCASTSD 48(AX), Y14 // 1e-20
	VBROADCASTSD 56(AX), Y15 // 1e-10
	XORQ BX, BX

terms2Loop:
	CMPQ BX, CX
	JGE terms2Done
	VMOVUPD (SI)(BX*8), Y0
	VMOVUPD (DI)(BX*8), Y1
	VMOVUPD (R8)(BX*8), Y2
	VMULPD Y0, Y0, Y3
	VMULPD Y1, Y1, Y4
	VADDPD Y4, Y3, Y3
	VMULPD Y2, Y2, Y4
	VADDPD Y4, Y3, Y3 // r²
	VMULPD Y14, Y3, Y3 // r² · 1e-20
	VMULPD Y3, Y3, Y4
	VMULPD Y3, Y4, Y4 // r⁶
	VMULPD Y4, Y4, Y5 // r¹²
	VDIVPD Y5, Y10, Y6 // 12A/r¹²
	VDIVPD Y4, Y11, Y7 // 6B/r⁶
	VSUBPD Y7, Y6, Y6 // f
	VDIVPD Y3, Y6, Y6 // f/r²
	VMULPD Y15, Y6, Y6 // scale
	VMULPD Y6, Y0, Y0
	VMULPD Y6, Y1, Y1
	VMULPD Y6, Y2, Y2
	VMOVUPD Y0, (R9)(BX*8)
	VMOVUPD Y1, (R10)(BX*8)
	VMOVUPD Y2, (R11)(BX*8)
	TESTQ DX, DX
	JZ terms2Next
	VDIVPD Y5, Y12, Y8 // A/r¹²
	VDIVPD Y4, Y13, Y9 // B/r⁶
	VSUBPD Y9, Y8, Y8
	VMOVUPD Y8, (R12)(BX*8)

terms2Next:
	ADDQ $4, BX
	JMP terms2Loop

terms2Done:
	VZEROUPPER
	RET

// func selectAVX2(a *[3]float64, b *soaView, start, end int, sel *selection, n int, k *kernelConstants) int
//
// selectAVX512 four atoms at a time: the same operations and tests. The
// lanes kept are moved together with VPERMD and the compress tables.
// Writes whole vectors: sel needs 4 spare entries past the last one kept.
TEXT ·selectAVX2(SB), NOSPLIT, $0-64
	MOVQ a+0(FP), AX
	VBROADCASTSD 0(AX), Y0
	VBROADCASTSD 8(AX), Y1
	VBROADCASTSD 16(AX), Y2
	MOVQ k+48(FP), AX
	VBROADCASTSD 0(AX), Y3 // 1
	VBROADCASTSD 8(AX), Y4 // cutoff²
	MOVQ b+8(FP), AX
	MOVQ 0(AX), R8  // bx
	MOVQ 8(AX), R9  // by
	MOVQ 16(AX), R10 // bz
	MOVQ start+16(FP), CX
	MOVQ end+24(FP), BX
	MOVQ sel+32(FP), AX
	MOVQ 0(AX), R11 // sx
	MOVQ 8(AX), R12 // sy
	MOVQ 16(AX), R13 // sz
	MOVQ 24(AX), R14 // j
	MOVQ n+40(FP), DX
	LEAQ loadMask<>(SB), DI
	LEAQ compress<>(SB), SI
	VMOVQ CX, X13
	VPBROADCASTD X13, Y13
	VPADDD laneOffsets<>(SB), Y13, Y13 // j of each lane (int32)
	MOVL $4, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

select2Loop:
	MOVQ BX, AX
	SUBQ CX, AX
	JLE select2Done
	CMPQ AX, $4
	JLE select2Count
	MOVQ $4, AX

select2Count:
	SHLQ $5, AX
	VMOVDQU (DI)(AX*1), Y15 // lanes in range
	VMASKMOVPD (R8)(CX*8), Y15, Y5
	VMASKMOVPD (R9)(CX*8), Y15, Y6
	VMASKMOVPD (R10)(CX*8), Y15, Y7
	VSUBPD Y5, Y0, Y5 // sx = ax − bx
	VSUBPD Y6, Y1, Y6
	VSUBPD Y7, Y2, Y7
	VMULPD Y5, Y5, Y8
	VMULPD Y6, Y6, Y9
	VADDPD Y9, Y8, Y8
	VMULPD Y7, Y7, Y9
	VADDPD Y9, Y8, Y8 // r²
	VCMPPD $0x1e, Y3, Y8, Y10 // r² > 1 (ordered)
	VCMPPD $0x11, Y4, Y8, Y11 // r² < cutoff² (ordered)
	VANDPD Y11, Y10, Y10
	VANDPD Y15, Y10, Y10
	VMOVMSKPD Y10, AX
	SHLQ $5, AX
	VMOVDQU (SI)(AX*1), Y12
	VPERMD Y5, Y12, Y5
	VMOVUPD Y5, (R11)(DX*8)
	VPERMD Y6, Y12, Y6
	VMOVUPD Y6, (R12)(DX*8)
	VPERMD Y7, Y12, Y7
	VMOVUPD Y7, (R13)(DX*8)
	VMOVDQU 512(SI)(AX*1), Y12
	VPERMD Y13, Y12, Y12
	VMOVDQU X12, (R14)(DX*4)
	VPADDD Y14, Y13, Y13
	SHRQ $5, AX
	POPCNTL AX, AX
	ADDQ AX, DX
	ADDQ $4, CX
	JMP select2Loop

select2Done:
	MOVQ DX, ret+56(FP)
	VZEROUPPER
	RET

// func cullAVX2(pos *[3]float64, boxes *boxesSoA, n int, k *kernelConstants) uint64
//
// cullAVX512 four boxes at a time: the same operations and test, the
// later choice (x < lo) taking precedence as in outside.
TEXT ·cullAVX2(SB), NOSPLIT, $0-40
	MOVQ pos+0(FP), AX
	VBROADCASTSD 0(AX), Y0
	VBROADCASTSD 8(AX), Y1
	VBROADCASTSD 16(AX), Y2
	MOVQ k+24(FP), AX
	VBROADCASTSD 8(AX), Y4 // cutoff²
	MOVQ boxes+8(FP), AX
	MOVQ 0(AX), R8 // lo x
	MOVQ 8(AX), R9 // lo y
	MOVQ 16(AX), R10 // lo z
	MOVQ 24(AX), R11 // hi x
	MOVQ 32(AX), R12 // hi y
	MOVQ 40(AX), R13 // hi z
	MOVQ n+16(FP), BX
	XORQ CX, CX
	XORQ DX, DX
	LEAQ loadMask<>(SB), DI

cull2Loop:
	MOVQ BX, AX
	SUBQ CX, AX
	JLE cull2Done
	CMPQ AX, $4
	JLE cull2Count
	MOVQ $4, AX

cull2Count:
	SHLQ $5, AX
	VMOVDQU (DI)(AX*1), Y15 // lanes in range

	VMASKMOVPD (R8)(CX*8), Y15, Y5
	VMASKMOVPD (R11)(CX*8), Y15, Y6
	VSUBPD Y5, Y0, Y7 // x − lo
	VSUBPD Y6, Y0, Y8 // x − hi
	VCMPPD $0x1e, Y6, Y0, Y9 // x > hi
	VANDPD Y8, Y9, Y10
	VCMPPD $0x11, Y5, Y0, Y9 // x < lo
	VBLENDVPD Y9, Y7, Y10, Y10
	VMULPD Y10, Y10, Y10 // dx·dx

	VMASKMOVPD (R9)(CX*8), Y15, Y5
	VMASKMOVPD (R12)(CX*8), Y15, Y6
	VSUBPD Y5, Y1, Y7 // x − lo
	VSUBPD Y6, Y1, Y8 // x − hi
	VCMPPD $0x1e, Y6, Y1, Y9 // x > hi
	VANDPD Y8, Y9, Y11
	VCMPPD $0x11, Y5, Y1, Y9 // x < lo
	VBLENDVPD Y9, Y7, Y11, Y11
	VMULPD Y11, Y11, Y11 // dy·dy

	VMASKMOVPD (R10)(CX*8), Y15, Y5
	VMASKMOVPD (R13)(CX*8), Y15, Y6
	VSUBPD Y5, Y2, Y7 // x − lo
	VSUBPD Y6, Y2, Y8 // x − hi
	VCMPPD $0x1e, Y6, Y2, Y9 // x > hi
	VANDPD Y8, Y9, Y12
	VCMPPD $0x11, Y5, Y2, Y9 // x < lo
	VBLENDVPD Y9, Y7, Y12, Y12
	VMULPD Y12, Y12, Y12 // dz·dz

	VADDPD Y11, Y10, Y10
	VADDPD Y12, Y10, Y10
	VCMPPD $0x19, Y4, Y10, Y10 // not (d² ≥ cutoff²), unordered true
	VANDPD Y15, Y10, Y10
	VMOVMSKPD Y10, SI
	SHLQ CX, SI
	ORQ SI, DX
	ADDQ $4, CX
	JMP cull2Loop

cull2Done:
	MOVQ DX, ret+32(FP)
	VZEROUPPER
	RET
