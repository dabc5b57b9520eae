/* SPDX-License-Identifier: MIT */
/* tls/accel, aarch64: OpenSSL's Armv8 perlasm reads the CPU's features from a word named
 * OPENSSL_armcap_P (bits defined by OpenSSL's crypto/arm_arch.h); this file owns it. Only
 * ARMV8_SHA256 is ever set, from ID_AA64ISAR0_EL1.SHA2: sha256_block_data_order then runs
 * on the SHA-256 instructions, else on its integer code. ARMV7_NEON stays clear, so its NEON
 * SHA-256 never runs, and nothing else of ours reads the word (ecp_nistz256's Armv8 code
 * uses only the base instruction set; X25519 is portable C).
 * The SHA-256 instructions use the vector registers v0-v7 and v16-v19 (never the
 * callee-saved v8-v15). The kernel allows FP/SIMD at EL1 on every core before its loop
 * starts (CPACR_EL1.FPEN, arch/aarch64/main.c) and saves no vector state: exception entry
 * saves the general registers only, interrupt handlers are built -mgeneral-regs-only and
 * only mark work, so vector registers are used only by code running to completion in a
 * core's loop, as on x86_64 (ADR-021). On Linux (host flavours) EL0 reads of the ID
 * register are emulated by the kernel, which reports the same SHA2 field.
 * Written on the boot core before any handshake, read-only after (tests excepted). */
#include "tls/accel/accel.h"
#include "tls/accel/cpu.h"

#include <stdint.h>

#define ARMV8_SHA256 (1u << 4) /* OpenSSL's crypto/arm_arch.h */
#define ISAR0_SHA2_SHIFT 12    /* ID_AA64ISAR0_EL1.SHA2: 0 none, 1 SHA-256, 2 SHA-256 and SHA-512 */
#define ISAR0_SHA2_MASK 0xfu

/* The name is the assembly's (referenced as hidden); nothing else in urMQTT uses it. */
extern unsigned int OPENSSL_armcap_P;
unsigned int OPENSSL_armcap_P;

static uint64_t cpu_isar0(void)
{
	uint64_t v;
	__asm__ volatile("mrs %0, id_aa64isar0_el1" : "=r"(v));
	return v;
}

void accel_cpu_use_optional(bool on)
{
	unsigned int cap = 0;
	if (on && ((cpu_isar0() >> ISAR0_SHA2_SHIFT) & ISAR0_SHA2_MASK) != 0)
		cap |= ARMV8_SHA256;
	OPENSSL_armcap_P = cap;
}

void accel_cpu_init(void)
{
	accel_cpu_use_optional(true);
}

const char *accel_cpu_describe(void)
{
	return OPENSSL_armcap_P & ARMV8_SHA256
		       ? "P-256 nistz256 Armv8, X25519 portable C, SHA-256 Armv8 FEAT_SHA256"
		       : "P-256 nistz256 Armv8, X25519 portable C, SHA-256 Armv8";
}
