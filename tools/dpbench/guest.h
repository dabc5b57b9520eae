/* SPDX-License-Identifier: MIT
 *
 * The in-guest dp-bench scenario (test=dpbench; benchmark images only, built with
 * URMQTT_DP_BENCH=1), the same on every architecture: see tools/dpbench/guest.c. A
 * platform's scenario registry calls dpb_guest_setup once and adds dpb_guest_poll to every
 * core's loop; the only thing it supplies besides kernel/node/port.h is how to stop.
 */
#ifndef TOOLS_DPBENCH_GUEST_H
#define TOOLS_DPBENCH_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dpb_guest_ops {
	/* Stop the machine; ok false when cycles failed and none completed. Must not
	 * return (if it does, the scenario stays quiet). */
	void (*stop)(bool ok);
	/* kpanic's exit code when the run cannot be set up (the platform's failed boot). */
	int fail_code;
};

/* Boot core, after the node's devices and the TLS self-test (mbedTLS's hooks installed),
 * before any other core runs its loop. cmdline (borrowed) may hold dpbench_s=N, the
 * seconds of the run (default 10, at most 3600); n_cores: the cores that will poll. ops
 * linked. Stops the machine (kpanic) when the shared handshake env cannot be built. */
void dpb_guest_setup(const char *cmdline, size_t cmdline_len, uint32_t n_cores, const struct dpb_guest_ops *ops);
/* Every core's loop handler (ctx unused): its own client and dp; core 0 prints the result
 * line and stops the machine when every core is done. 1 while this core measures. */
int dpb_guest_poll(void *ctx);

#endif
