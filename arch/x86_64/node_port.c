/* SPDX-License-Identifier: MIT
 *
 * The image's side of kernel/node/port.h on x86_64: the calling core from its per-core
 * block, the TSC clock, the wall clock (arch/x86_64/wall.c's), the wake-up IPI, the MSI
 * messages that reach a core's device vectors, the per-core device-interrupt counts and
 * the AES-NI report (the heap and the CSPRNG are kernel/node/port_kernel.c's, shared by
 * every image). Owns no state.
 */
#include <stdatomic.h>

#include "arch/x86_64/x86.h"
#include "kernel/log.h"
#include "kernel/node/port.h"
#include "kernel/time.h"
#include "lib/err.h"
/* mbedTLS's own (library-internal) header: whether its AES and GCM take the AES-NI and
 * PCLMULQDQ paths on this CPU (ADR-021). */
#include "aesni.h"

uint32_t node_port_core_self(void)
{
	return x86_core_index();
}

uint64_t node_port_now_ms(void)
{
	return x86_now_ns() / 1000000u;
}

int64_t node_port_wall_s(void)
{
	/* 0 while unknown (1970): every certificate looks "not yet valid", visibly. */
	return (int64_t)(x86_wall_ns() / 1000000000u);
}

uint64_t node_port_now_ns(void)
{
	return x86_now_ns();
}

int64_t node_port_wall_ms(void)
{
	return x86_wall_ms();
}

void node_port_wall_reference(uint64_t ref_ns, uint64_t mono_ns, uint32_t period_s)
{
	x86_wall_reference(ref_ns, mono_ns, period_s);
}

bool node_port_wake(uint32_t dst)
{
	/* seq_cst: orders the message's commit (a release store of the ring's head) before
	 * the load of the flag below; pairs with the fence in main_idle (kernel/node/node.c
	 * describes the protocol). */
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&x86_cores[dst].sleeping, memory_order_relaxed))
		return false;
	x86_apic_send_wake(x86_cores[dst].apic_id);
	return true;
}

uint64_t node_port_irqs(uint32_t core)
{
	/* Written only by that core's own interrupt handler and read by that core: relaxed
	 * is enough. */
	return atomic_load_explicit(&x86_cores[core].n_dev_irqs, memory_order_relaxed);
}

const char *node_port_crypto_accel(void)
{
	bool aes = mbedtls_aesni_has_support(MBEDTLS_AESNI_AES) != 0;
	bool clmul = mbedtls_aesni_has_support(MBEDTLS_AESNI_CLMUL) != 0;
	return aes ? (clmul ? "AES-NI used, PCLMULQDQ used" : "AES-NI used, PCLMULQDQ absent")
		   : (clmul ? "AES-NI absent, PCLMULQDQ used" : "AES-NI absent, PCLMULQDQ absent");
}

uint32_t node_port_msi_vectors(void)
{
	return X86_VEC_DEV_COUNT;
}

int node_port_msi(uint32_t core, uint32_t vec, uint16_t requester, uint64_t *addr, uint32_t *data)
{
	(void)requester; /* the local APIC's message names the core, not the device */
	if (vec >= X86_VEC_DEV_COUNT || core >= PLAT_MAX_CPUS)
		return -E_RANGE;
	*addr = x86_msi_addr(x86_cores[core].apic_id);
	*data = X86_VEC_DEV_BASE + vec;
	return 0;
}
