/* SPDX-License-Identifier: MIT
 *
 * The aarch64 entropy hook for kernel/csprng: RNDRRS (FEAT_RNG: a number from a generator
 * reseeded from the true entropy source right before, meant for seeding) when the CPU has
 * it, never anything predictable: without FEAT_RNG the probe reports no source (the
 * virtio-rng seed, when the device exists, is mixed in later by the devices' bring-up).
 * Both instructions may fail transiently (NZCV.Z set): bounded retries, then the request
 * fails.
 */
#include "arch/aarch64/a64.h"
#include "kernel/csprng.h"
#include "lib/err.h"
#include "lib/mem.h"

#define RNDRRS_TRIES 1024u

static bool entropy_rndrrs(uint64_t *v)
{
	for (uint32_t i = 0; i < RNDRRS_TRIES; i++) {
		uint64_t r, nzcv;
		/* mrs x, RNDRRS (s3_3_c2_c4_1); NZCV.Z set on failure */
		__asm__ volatile("mrs %0, s3_3_c2_c4_1\n\tmrs %1, nzcv" : "=r"(r), "=r"(nzcv));
		if (!(nzcv & (1u << 30))) {
			*v = r;
			return true;
		}
	}
	return false;
}

static int entropy_get(void *ctx, uint8_t *buf, size_t len)
{
	(void)ctx;
	while (len) {
		uint64_t v;
		if (!entropy_rndrrs(&v))
			return -E_IO;
		size_t n = len < sizeof v ? len : sizeof v;
		memcpy(buf, &v, n);
		mem_wipe(&v, sizeof v);
		buf += n;
		len -= n;
	}
	return 0;
}

bool a64_entropy_probe(bool pretend_none, struct csprng_entropy *out)
{
	memset(out, 0, sizeof *out);
	if (pretend_none || ((A64_SYSREG_READ(id_aa64isar0_el1) >> 60) & 0xfu) == 0)
		return false;
	out->get = entropy_get;
	out->name = "RNDRRS (FEAT_RNG)";
	return true;
}
