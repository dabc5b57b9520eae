/* SPDX-License-Identifier: MIT
 *
 * The TLS handshake env's hooks on the platform port (kernel/node/port.h): the CSPRNG,
 * the wall and monotonic clocks, the calling core, and the platform heap without a
 * budget. The node's broker starts from these and charges the heap to its core; host
 * tools (tools/tls-echo) and the micro-benchmarks use them as they are or wrap the heap
 * to count it, so the platform's hooks exist once per platform.
 */
#ifndef KERNEL_NODE_TLS_PORT_H
#define KERNEL_NODE_TLS_PORT_H

#include "tls/handshake.h"
#include "tls/record.h"

/* The handshake hooks on the port (ctx NULL). */
struct tls_hs_ops node_tls_port_hs_ops(void);
/* The record layer's heap on the port (sealed output chunks; ctx NULL). */
struct tls_rec_ops node_tls_port_rec_ops(void);

#endif
