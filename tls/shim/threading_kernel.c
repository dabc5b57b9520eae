/* SPDX-License-Identifier: MIT
 *
 * mbedTLS's mutexes in the images (ADR-026): test-and-test-and-set spinlocks. They
 * guard what mbedTLS keeps process-wide (the PSA key store, PSA's global state); every
 * other TLS object is per core. Taken only in a core's loop: interrupt handlers never
 * enter mbedTLS, so a holder is never interrupted by code that wants the same lock.
 * Never sleeps, never allocates.
 */
#include "lib/spin.h"
#include "tls/shim/threading_kernel.h"

#include "mbedtls/threading.h"

/* Statistics: relaxed, counts only. */
static uint64_t tk_locks, tk_contended;

static void tk_init(mbedtls_threading_mutex_t *m)
{
	if (!m)
		return;
	__atomic_store_n(&m->locked, 0u, __ATOMIC_RELAXED); /* not yet shared: published by
							       * whatever hands m to another core */
	m->valid = 1;
}

static void tk_free(mbedtls_threading_mutex_t *m)
{
	if (m)
		m->valid = 0;
}

static int tk_lock(mbedtls_threading_mutex_t *m)
{
	if (!m || !m->valid)
		return MBEDTLS_ERR_THREADING_BAD_INPUT_DATA;
	/* Acquire on success: what the previous holder wrote before its release store is
	 * visible to the critical section. The inner relaxed loads only wait, taking no data. */
	__atomic_fetch_add(&tk_locks, 1u, __ATOMIC_RELAXED);
	while (__atomic_exchange_n(&m->locked, 1u, __ATOMIC_ACQUIRE)) {
		__atomic_fetch_add(&tk_contended, 1u, __ATOMIC_RELAXED);
		while (__atomic_load_n(&m->locked, __ATOMIC_RELAXED))
			spin_hint();
	}
	return 0;
}

static int tk_unlock(mbedtls_threading_mutex_t *m)
{
	if (!m || !m->valid)
		return MBEDTLS_ERR_THREADING_BAD_INPUT_DATA;
	/* Release: the critical section's writes are visible before the lock reads free. */
	__atomic_store_n(&m->locked, 0u, __ATOMIC_RELEASE);
	return 0;
}

void tls_threading_init(void)
{
	mbedtls_threading_set_alt(tk_init, tk_free, tk_lock, tk_unlock);
}

uint64_t tls_threading_locks(void)
{
	return __atomic_load_n(&tk_locks, __ATOMIC_RELAXED);
}

uint64_t tls_threading_contended(void)
{
	return __atomic_load_n(&tk_contended, __ATOMIC_RELAXED);
}
