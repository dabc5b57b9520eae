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
 * mbedTLS's AES and GCM (MBEDTLS_AESCE_C, ADR-071) choose their own code: aesce.c asks
 * getauxval(AT_HWCAP) once and caches the answer; tls/accel/shim/sys/auxv.h sends that question
 * to accel_cpu_getauxval below, which answers from ID_AA64PFR0_EL1 and ID_AA64ISAR0_EL1.
 * aes.c, aesce.c and gcm.c are built with Advanced SIMD (tls/module.mk) and use v0-v31 under
 * the same rule as the SHA-256 code.
 * Written on the boot core before any handshake, read-only after (tests excepted). */
#include "tls/accel/accel.h"
#include "tls/accel/cpu.h"

#include <stdint.h>

#define ARMV8_SHA256 (1u << 4) /* OpenSSL's crypto/arm_arch.h */
#define ISAR0_SHA2_SHIFT 12    /* ID_AA64ISAR0_EL1.SHA2: 0 none, 1 SHA-256, 2 SHA-256 and SHA-512 */
#define ISAR0_SHA2_MASK 0xfu
#define ISAR0_AES_SHIFT 4      /* ID_AA64ISAR0_EL1.AES: 0 none, 1 AES, 2 AES and PMULL */
#define ISAR0_AES_PMULL 2u
#define PFR0_ADVSIMD_SHIFT 20  /* ID_AA64PFR0_EL1.AdvSIMD: 0 or 1 present, 0xf absent */
#define FIELD_MASK 0xfu
#define AUX_AT_HWCAP 16ul      /* Linux's auxiliary vector tag and HWCAP bits */
#define AUX_HWCAP_ASIMD (1ul << 1)
#define AUX_HWCAP_AES (1ul << 3)
#define AUX_HWCAP_PMULL (1ul << 4)

/* The name is the assembly's (referenced as hidden); nothing else in urMQTT uses it. */
extern unsigned int OPENSSL_armcap_P;
unsigned int OPENSSL_armcap_P;

/* mbedTLS's cache of getauxval's answer (aesce.c, MBEDTLS_AESCE_C; -1: ask again). Its
 * declaration in aesce.h is visible only to code built with Advanced SIMD, hence this one; a
 * build whose aesce.c lost its code (the SIMD flags of tls/module.mk) fails to link here. */
extern signed char mbedtls_aesce_has_support_result;

/* AES and PMULL forgotten (accel_cpu_use_optional(false)); the CPU's word otherwise. */
static bool cpu_aes_forgotten;

static uint64_t cpu_isar0(void)
{
	uint64_t v;
	__asm__ volatile("mrs %0, id_aa64isar0_el1" : "=r"(v));
	return v;
}

static uint64_t cpu_pfr0(void)
{
	uint64_t v;
	__asm__ volatile("mrs %0, id_aa64pfr0_el1" : "=r"(v));
	return v;
}

unsigned long accel_cpu_getauxval(unsigned long type)
{
	if (type != AUX_AT_HWCAP)
		return 0;
	unsigned long hw = 0;
	if (((cpu_pfr0() >> PFR0_ADVSIMD_SHIFT) & FIELD_MASK) != FIELD_MASK)
		hw |= AUX_HWCAP_ASIMD;
	/* AES alone is not enough: mbedTLS's GCM multiplies with PMULL whenever it uses AES. */
	if (!cpu_aes_forgotten && ((cpu_isar0() >> ISAR0_AES_SHIFT) & FIELD_MASK) >= ISAR0_AES_PMULL)
		hw |= AUX_HWCAP_AES | AUX_HWCAP_PMULL;
	return hw;
}

void accel_cpu_use_optional(bool on)
{
	unsigned int cap = 0;
	if (on && ((cpu_isar0() >> ISAR0_SHA2_SHIFT) & ISAR0_SHA2_MASK) != 0)
		cap |= ARMV8_SHA256;
	OPENSSL_armcap_P = cap;
	cpu_aes_forgotten = !on;
	mbedtls_aesce_has_support_result = -1; /* contexts keyed from now on ask again */
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
