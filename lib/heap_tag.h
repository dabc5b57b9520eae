/* SPDX-License-Identifier: MIT
 *
 * Who asked for memory: the accounting tag every allocation hook of the layers passes (tls/,
 * dp/, mqtt/ through dp) and the kernel heap counts per tag (kernel/mm/heap.h). Accounting
 * only, never policy. A tag travels as this enum from the caller to the heap; nothing
 * matches strings per allocation.
 */
#ifndef LIB_HEAP_TAG_H
#define LIB_HEAP_TAG_H

/* At most 16 tags. */
enum heap_tag {
	HEAP_TAG_OTHER,
	HEAP_TAG_KERNEL,
	HEAP_TAG_TLS_HANDSHAKE, /* mbedTLS's handshake state and key store */
	HEAP_TAG_TLS_RECORD,    /* record reassembly buffers and sealed TLS output waiting for TCP */
	HEAP_TAG_TCP,
	HEAP_TAG_MQTT,          /* sessions, topic levels, messages */
	HEAP_TAG_STORE,
	HEAP_TAG__COUNT
};

#endif
