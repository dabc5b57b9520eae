/* SPDX-License-Identifier: MIT
 *
 * What a platform gives a node (kernel/node/): linked functions, one implementation per
 * platform (the image: arch/x86_64/node_port.c; the hosted broker: hosted/node_port.c).
 * Everything the node builds out of layers (TCP, TLS, MQTT shards, storage links) reaches
 * the machine only through these. Each may be called from any core, about the calling core
 * only; none blocks.
 */
#ifndef KERNEL_NODE_PORT_H
#define KERNEL_NODE_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/heap.h"

/* The calling core's index (0 .. cores - 1). */
uint32_t node_port_core_self(void);
/* Monotonic nanoseconds and milliseconds since an arbitrary start. */
uint64_t node_port_now_ns(void);
uint64_t node_port_now_ms(void);
/* Unix seconds (certificate validity) and milliseconds (storage's stamps) of the wall
 * clock; 0 when unknown. */
int64_t node_port_wall_s(void);
int64_t node_port_wall_ms(void);
/* len bytes from the platform's CSPRNG: 0, or -E_IO when it has none. */
int node_port_random(void *buf, size_t len);
/* len bytes (16-byte aligned, zeroed) charged to tag on the calling core; NULL when the
 * platform has none. Freed by node_port_free with the same len. */
void *node_port_alloc(size_t len, enum heap_tag tag);
void node_port_free(void *p, size_t len);
/* Bytes the platform could still give (its free memory), whatever a caller's own limit. */
size_t node_port_room(void);
/* The platform heap's totals over every core: bytes requested and bytes of blocks held. */
void node_port_heap_totals(uint64_t *requested, uint64_t *blocks);
/* A zeroed region of at least len bytes, page aligned, for one core's tables; *got is its
 * real length. NULL when there is no such memory. Regions live as long as the node. */
void *node_port_region(size_t len, size_t *got);
void node_port_region_free(void *p, size_t got);

/* What accelerates the TLS ciphers on this CPU, for the self-test's line (for example
 * "AES-NI used, PCLMULQDQ used"); static text. */
const char *node_port_crypto_accel(void);

/* ---- the multicore node only (kernel/node/node.c; the hosted broker has one core) ---- */
/* SNTP's agreed time (kernel/node/opsd.c): Unix ns ref_ns at monotonic mono_ns, the wall
 * clock's reference from now on (the platform stops its own RTC corrections); the next
 * comes about period_s later. Core 0 only, from its loop (the wall clock's one writer). */
void node_port_wall_reference(uint64_t ref_ns, uint64_t mono_ns, uint32_t period_s);
/* The sending half of the wake-up protocol (kernel/node/node.c): after a mesh message to
 * core dst was committed, a sequentially consistent fence, then dst interrupted if it
 * halts or is about to. True when an interrupt was sent. */
bool node_port_wake(uint32_t dst);
/* Device interrupts core has taken so far (statistics; read by that core). */
uint64_t node_port_irqs(uint32_t core);
/* Device interrupts by MSI: how many device vectors a core has (0: none, the devices are
 * polled), and the message (address, data) a device (its PCI requester ID: bus << 8 |
 * device << 3 | function) sends to raise device vector vec (< that count) on core: 0, or
 * -E_RANGE / -E_NOSYS / -E_NOMEM. Boot core. Taken interrupts are counted per core
 * (node_port_irqs) and only mark work. */
uint32_t node_port_msi_vectors(void);
int node_port_msi(uint32_t core, uint32_t vec, uint16_t requester, uint64_t *addr /* out */,
		  uint32_t *data /* out */);

#endif
