/* SPDX-License-Identifier: MIT
 *
 * The x86_64 entropy hook for kernel/csprng: RDSEED (output of the CPU's conditioned
 * entropy source, meant for seeding) when offered, else RDRAND (output of the CPU's own
 * DRBG, reseeded by that source: a weaker assumption, named as such in the banner).
 * Both may fail transiently (carry clear); bounded retries with a pause between, then
 * the request fails. Never falls back to anything predictable (TSC, counters): with no
 * instruction the probe reports no source and the boot stops.
 */
#include "arch/x86_64/x86.h"
#include "kernel/csprng.h"
#include "lib/err.h"
#include "lib/mem.h"

enum entropy_insn { ENTROPY_NONE, ENTROPY_RDSEED, ENTROPY_RDRAND };
static enum entropy_insn entropy_insn;

static int entropy_get(void *ctx, uint8_t *buf, size_t len)
{
	(void)ctx;
	while (len) {
		uint64_t v;
		bool ok = entropy_insn == ENTROPY_RDSEED ? x86_rdseed64(&v, X86_RDSEED_TRIES)
			: entropy_insn == ENTROPY_RDRAND ? x86_rdrand64(&v, X86_RDRAND_TRIES) : false;
		if (!ok)
			return -E_IO;
		size_t n = MIN(len, sizeof v);
		memcpy(buf, &v, n);
		mem_wipe(&v, sizeof v);
		buf += n;
		len -= n;
	}
	return 0;
}

bool x86_entropy_probe(bool pretend_none, struct csprng_entropy *out)
{
	uint32_t r[4];
	x86_cpuid(0, 0, r);
	uint32_t max = r[0];
	bool rdseed = false, rdrand;
	if (max >= 7) {
		x86_cpuid(7, 0, r);
		rdseed = (r[1] >> 18) & 1;
	}
	x86_cpuid(1, 0, r);
	rdrand = (r[2] >> 30) & 1;
	if (pretend_none)
		rdseed = rdrand = false;
	entropy_insn = rdseed ? ENTROPY_RDSEED : rdrand ? ENTROPY_RDRAND : ENTROPY_NONE;
	out->ctx = NULL;
	out->get = entropy_insn == ENTROPY_NONE ? NULL : entropy_get;
	out->name = rdseed ? "RDSEED" : rdrand ? "RDRAND (no RDSEED)" : "none";
	return entropy_insn != ENTROPY_NONE;
}
