/* SPDX-License-Identifier: MIT */
/* tls/accel, x86_64: OpenSSL's perlasm reads the CPU's features from a four-word array named
 * OPENSSL_ia32cap_P (word 2 = CPUID leaf 7 EBX); this file owns that array. Only the bits our
 * assembly may act on are ever set: BMI1, BMI2 and ADX (the MULX/ADCX/ADOX paths of
 * ecp_nistz256 and x25519). AVX2 stays clear whatever the CPU says, because the kernel never
 * enables the AVX register state (XCR0, ADR-021), so the AVX2 table gathers would fault;
 * the SSE2 gathers run instead. Written on the boot core before any handshake, read-only after. */
#include "tls/accel/accel.h"
#include "tls/accel/cpu.h"

#include <stdint.h>

#define CAP7_BMI1 (1u << 3)
#define CAP7_BMI2 (1u << 8)
#define CAP7_ADX (1u << 19)

/* The name and layout are the assembly's; nothing else in urMQTT uses it. */
extern unsigned int OPENSSL_ia32cap_P[4];
unsigned int OPENSSL_ia32cap_P[4];

static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	__asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

static uint32_t cpu_leaf7_ebx(void)
{
	uint32_t r[4];
	cpuid(0, 0, r);
	if (r[0] < 7)
		return 0;
	cpuid(7, 0, r);
	return r[1];
}

void accel_cpu_use_optional(bool on)
{
	OPENSSL_ia32cap_P[0] = OPENSSL_ia32cap_P[1] = OPENSSL_ia32cap_P[3] = 0;
	OPENSSL_ia32cap_P[2] = on ? cpu_leaf7_ebx() & (CAP7_BMI1 | CAP7_BMI2 | CAP7_ADX) : 0;
}

void accel_cpu_init(void)
{
	accel_cpu_use_optional(true);
}

const char *accel_cpu_describe(void)
{
	const unsigned int mulx_adx = CAP7_BMI2 | CAP7_ADX;
	return (OPENSSL_ia32cap_P[2] & mulx_adx) == mulx_adx
		       ? "P-256 nistz256 x86_64 MULX/ADX, X25519 fe64 MULX/ADX"
		       : "P-256 nistz256 x86_64, X25519 fe51";
}
