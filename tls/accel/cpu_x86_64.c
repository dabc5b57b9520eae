/* SPDX-License-Identifier: MIT */
/* tls/accel, x86_64: OpenSSL's perlasm reads the CPU's features from a four-word array named
 * OPENSSL_ia32cap_P (word 2 = CPUID leaf 7 EBX); this file owns that array. Only the bits our
 * assembly may act on are ever set, all in word 2:
 *   - BMI1, BMI2 and ADX: the MULX/ADCX/ADOX paths of ecp_nistz256 and x25519;
 *   - SHA: SHA-256 on the SHA extensions (sha256_block_data_order_shaext), only when leaf 1
 *     also reports SSSE3, whose pshufb/palignr that code uses beside SSE2.
 * Words 0, 1 and 3 stay zero, so these paths never run: AVX2 (word 2 bit 5 is never set),
 * AVX (word 1 bit 28), SSSE3 (word 1 bit 9) and XOP. The kernel never enables the AVX
 * register state (XCR0, ADR-021), so AVX code would fault; the P-256 table gathers run on
 * SSE2 instead, and SHA-256 without SHA-NI runs sha512-x86_64's integer code (general
 * registers only). SHA-NI and the SSE2 gathers use XMM registers, which the kernel allows
 * in a core's loop and never saves (ADR-021).
 * Written on the boot core before any handshake, read-only after (tests excepted). */
#include "tls/accel/accel.h"
#include "tls/accel/cpu.h"

#include <stdint.h>

#define CAP1_SSSE3 (1u << 9) /* CPUID leaf 1 ECX */
#define CAP7_BMI1 (1u << 3)  /* CPUID leaf 7 EBX, OPENSSL_ia32cap_P word 2 */
#define CAP7_BMI2 (1u << 8)
#define CAP7_ADX (1u << 19)
#define CAP7_SHA (1u << 29)

/* The name and layout are the assembly's; nothing else in urMQTT uses it. */
extern unsigned int OPENSSL_ia32cap_P[4];
unsigned int OPENSSL_ia32cap_P[4];

static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	__asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

/* Leaf 7 EBX with SHA kept only when leaf 1 reports SSSE3 too. */
static uint32_t cpu_leaf7_ebx(void)
{
	uint32_t r[4];
	cpuid(0, 0, r);
	if (r[0] < 7)
		return 0;
	cpuid(1, 0, r);
	uint32_t ssse3 = r[2] & CAP1_SSSE3;
	cpuid(7, 0, r);
	return ssse3 ? r[1] : r[1] & ~CAP7_SHA;
}

void accel_cpu_use_optional(bool on)
{
	OPENSSL_ia32cap_P[0] = OPENSSL_ia32cap_P[1] = OPENSSL_ia32cap_P[3] = 0;
	OPENSSL_ia32cap_P[2] = on ? cpu_leaf7_ebx() & (CAP7_BMI1 | CAP7_BMI2 | CAP7_ADX | CAP7_SHA) : 0;
}

void accel_cpu_init(void)
{
	accel_cpu_use_optional(true);
}

const char *accel_cpu_describe(void)
{
	static const char *const what[2][2] = {
		{ "P-256 nistz256 x86_64, X25519 fe51, SHA-256 x86_64",
		  "P-256 nistz256 x86_64, X25519 fe51, SHA-256 x86_64 SHA-NI" },
		{ "P-256 nistz256 x86_64 MULX/ADX, X25519 fe64 MULX/ADX, SHA-256 x86_64",
		  "P-256 nistz256 x86_64 MULX/ADX, X25519 fe64 MULX/ADX, SHA-256 x86_64 SHA-NI" },
	};
	const unsigned int mulx_adx = CAP7_BMI2 | CAP7_ADX;
	return what[(OPENSSL_ia32cap_P[2] & mulx_adx) == mulx_adx][(OPENSSL_ia32cap_P[2] & CAP7_SHA) != 0];
}
