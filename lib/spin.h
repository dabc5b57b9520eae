/* SPDX-License-Identifier: MIT
 *
 * The hint a core gives while it spins on a value another core will change: PAUSE on
 * x86_64, YIELD on aarch64 (each lets a sibling hardware thread or the hypervisor run and
 * avoids the memory-order flush at loop exit). Nothing else; the caller's atomics carry
 * the ordering. The one place the architectures differ for this.
 */
#ifndef LIB_SPIN_H
#define LIB_SPIN_H

static inline void spin_hint(void)
{
#if defined(__x86_64__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" : : : "memory");
#else
	__asm__ volatile("" : : : "memory");
#endif
}

#endif
