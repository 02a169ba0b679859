// SPDX-License-Identifier: GPL-2.0
/*
 * Register tables per architecture (see arch.h). Sources: the perf_regs
 * uapi headers (arch/x86/include/uapi/asm/perf_regs.h,
 * arch/arm64/include/uapi/asm/perf_regs.h), the psABIs' DWARF register
 * numbers (x86-64 psABI figure 3.36, "DWARF for the Arm 64-bit
 * Architecture", section 4.1) and their callee-saved sets; docs/arm64.md §1-§2.
 */
#include "arch.h"

#include <elf.h>
#include <string.h>

static const struct arch x86_64 = {
	.id = ARCH_X86_64,
	.name = "x86_64",
	.e_machine = EM_X86_64,
	.nregs = 17,
	.sp = 7, .fp = 6, .pc = 16, .lr = ARCH_NOREG,
	/* DWARF rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip; perf AX 0,
	 * BX 1, CX 2, DX 3, SI 4, DI 5, BP 6, SP 7, IP 8, R8..R15 16..23 */
	.perf_bit = { 0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23, 8,
		      [17 ... ARCH_MAXREGS - 1] = ARCH_NOREG },
	.saved = { 3, 6, 12, 13, 14, 15 }, /* rbx rbp r12-r15 */
	.nsaved = 6,
	.addr_mask = ~0ULL,
	.regs_user = 0xff0fffULL,
};

/* perf bits X0..X28 0-28, X29 29, LR 30, SP 31, PC 32 (VG 46 on SVE,
 * never read): the DWARF numbers of x0-x30 and sp are the same, the pc
 * has no DWARF number and lives in slot 32. Callee-saved: x19-x29
 * (AAPCS64, section 6.1.1); x30 is the return address column. Return addresses
 * may carry a pointer-authentication code above bit 47 (48-bit user
 * address space, the Linux arm64 default). */
static const struct arch arm64 = {
	.id = ARCH_ARM64,
	.name = "aarch64",
	.e_machine = EM_AARCH64,
	.nregs = 33,
	.sp = 31, .fp = 29, .pc = 32, .lr = 30,
	.perf_bit = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
		      16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30,
		      31, 32 },
	.saved = { 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29 },
	.nsaved = 11,
	.addr_mask = (1ULL << 48) - 1,
	.regs_user = (1ULL << 33) - 1,
};

const struct arch *arch_x86_64(void)
{
	return &x86_64;
}

const struct arch *arch_arm64(void)
{
	return &arm64;
}

const struct arch *arch_by_name(const char *name)
{
	if (!name)
		return NULL;
	if (!strcmp(name, "x86_64") || !strcmp(name, "amd64"))
		return &x86_64;
	if (!strcmp(name, "aarch64") || !strcmp(name, "arm64"))
		return &arm64;
	return NULL;
}

const struct arch *arch_by_machine(unsigned e_machine)
{
	if (e_machine == EM_X86_64)
		return &x86_64;
	if (e_machine == EM_AARCH64)
		return &arm64;
	return NULL;
}

const struct arch *arch_host(void)
{
#if defined(__aarch64__)
	return &arm64;
#else
	return &x86_64;
#endif
}
