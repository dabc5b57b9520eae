/* SPDX-License-Identifier: MIT
 *
 * test=tls (development images only): mbedTLS used from every core at once (ADR-026),
 * after the boot's TLS self-test (kernel/node/tls_selftest.c) installed its hooks and
 * initialised PSA. Owns the per-core round counters; the cores share only the done count
 * (its orderings are said where it is used).
 */
#include <stdatomic.h>

#include "arch/x86_64/scenarios/scenarios.h"
#include "kernel/node/tls_selftest.h"
#include "arch/x86_64/x86.h"
#include "kernel/log.h"
#include "kernel/panic.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "tls/shim/threading_kernel.h"

#include "psa/crypto.h"
#include "psa/crypto_extra.h"

/* ---- test=tls: mbedTLS from every core at once (ADR-026) -------------------------------
 * Every core, from its own loop and at the same time as the others, runs TC_ROUNDS of:
 * the development chain's X.509 verification (its own parse, PSA imports the CA's public
 * key) and a P-256 key made, used to sign and verify, and destroyed through PSA. These
 * are the operations a handshake shares with other cores: PSA's key store and globals,
 * under mbedTLS's mutexes (our spinlocks), and the accounting of the per-core hooks. A
 * core that finishes counts itself done (release); core 0, once all are done (acquire),
 * checks that every round succeeded and that PSA holds exactly the keys it held before. */
#define TC_ROUNDS 8u
struct tc_core {
	uint32_t rounds, errors;
	bool done;
} ALIGNED(64);
static struct tc_core tc_cores[PLAT_MAX_CPUS];
static uint32_t tc_n_cores;
static size_t tc_slots_before;
static _Atomic uint32_t tc_n_done;

static size_t tc_volatile_slots(void)
{
	mbedtls_psa_stats_t st;
	mbedtls_psa_get_stats(&st);
	return st.MBEDTLS_PRIVATE(volatile_slots);
}

void x86_tls_concurrent_setup(uint32_t n_cores)
{
	tc_n_cores = n_cores;
	tc_slots_before = tc_volatile_slots();
	LOG_INFO("test", "scenario tls: %u cores, %u rounds each of X.509 verify + P-256 sign/verify, "
			 "at the same time", (unsigned)n_cores, (unsigned)TC_ROUNDS);
}

static int tc_round(void)
{
	char ca_cn[64], srv_cn[64];
	uint32_t vflags;
	int err = node_tls_selftest_certs(ca_cn, srv_cn, sizeof ca_cn, &vflags);
	if (err)
		return err;
	psa_key_attributes_t a = PSA_KEY_ATTRIBUTES_INIT;
	psa_set_key_type(&a, PSA_KEY_TYPE_ECC_KEY_PAIR(PSA_ECC_FAMILY_SECP_R1));
	psa_set_key_bits(&a, 256);
	psa_set_key_usage_flags(&a, PSA_KEY_USAGE_SIGN_HASH | PSA_KEY_USAGE_VERIFY_HASH);
	psa_set_key_algorithm(&a, PSA_ALG_ECDSA(PSA_ALG_SHA_256));
	mbedtls_svc_key_id_t key;
	if (psa_generate_key(&a, &key) != PSA_SUCCESS)
		return -E_NOMEM;
	uint8_t hash[32], sig[PSA_SIGNATURE_MAX_SIZE];
	size_t sig_len = 0;
	memset(hash, (int)x86_core_index(), sizeof hash);
	if (psa_sign_hash(key, PSA_ALG_ECDSA(PSA_ALG_SHA_256), hash, sizeof hash, sig, sizeof sig, &sig_len) !=
		    PSA_SUCCESS ||
	    psa_verify_hash(key, PSA_ALG_ECDSA(PSA_ALG_SHA_256), hash, sizeof hash, sig, sig_len) != PSA_SUCCESS)
		err = -E_PROTO;
	if (psa_destroy_key(key) != PSA_SUCCESS && !err)
		err = -E_IO;
	return err;
}

static void tc_verdict(void)
{
	uint32_t errors = 0, rounds = 0;
	for (uint32_t i = 0; i < tc_n_cores; i++) {
		errors += tc_cores[i].errors;
		rounds += tc_cores[i].rounds;
	}
	size_t slots = tc_volatile_slots();
	LOG_INFO("test", "tls: %u rounds on %u cores, %u errors, %lu locks (%lu waited); PSA volatile keys %lu -> %lu",
		 (unsigned)rounds, (unsigned)tc_n_cores, (unsigned)errors, (unsigned long)tls_threading_locks(),
		 (unsigned long)tls_threading_contended(), (unsigned long)tc_slots_before, (unsigned long)slots);
	if (errors || slots != tc_slots_before || rounds != tc_n_cores * TC_ROUNDS)
		PANIC("tls scenario: concurrent mbedTLS use failed");
	LOG_INFO("test", "scenario tls: every core's rounds succeeded, no key left behind");
	x86_stop(X86_EXIT_BOOT_OK);
}

int x86_tls_concurrent_poll(void *ctx)
{
	(void)ctx;
	uint32_t me = x86_core_index();
	if (me >= tc_n_cores)
		return 0;
	struct tc_core *c = &tc_cores[me];
	if (c->done) {
		/* Acquire: pairs with each core's release below; its counters are complete. */
		if (me == 0 && atomic_load_explicit(&tc_n_done, memory_order_acquire) == tc_n_cores)
			tc_verdict();
		return 0;
	}
	if (tc_round() != 0)
		c->errors++;
	if (++c->rounds == TC_ROUNDS) {
		c->done = true;
		/* Release: this core's counters are written before it counts as done. */
		atomic_fetch_add_explicit(&tc_n_done, 1, memory_order_release);
	}
	return 1;
}
