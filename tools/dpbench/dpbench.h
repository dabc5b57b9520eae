/* SPDX-License-Identifier: MIT
 *
 * dp-bench: the data plane of one core measured on its own, with no network. A TLS 1.3
 * client (mbedTLS, with the certificate of one device) and this core's data plane (dp/:
 * our TLS server with client certificates, our record layer, the MQTT broker) talk
 * through an in-memory pipe that stands where TCP would be. Each cycle is a full mTLS
 * handshake, CONNECT/CONNACK and DISCONNECT, then the connection is released, so the
 * figure is complete handshakes per second per core, client work included.
 *
 * Only in the benchmark build (URMQTT_DP_BENCH: mbedTLS with its client side, which the
 * broker image never contains). Portable: the host microbenchmark and the bench image's
 * scenario both drive it. Core-local: one struct dpb per core, each with its own dp;
 * the handshake env (tls/handshake.h) is shared, as in the broker (ADR-026). Never
 * allocates except through the dp heap ops and mbedTLS's hooks; every step is bounded
 * (one client handshake step, then the server's staged steps).
 */
#ifndef TOOLS_DPBENCH_DPBENCH_H
#define TOOLS_DPBENCH_DPBENCH_H

#include "dp/dp.h"

struct dpb_client_config {
	/* The client's credentials, DER or PEM (PEM NUL-terminated, len counting the NUL);
	 * linked. The certificate's identity must be `client_id` (ADR-017). */
	const uint8_t *ca, *cert, *key;
	size_t ca_len, cert_len, key_len;
	const char *client_id;    /* linked */
	int (*random)(void *ctx, uint8_t *out, size_t len); /* CSPRNG, 0 or -E_* */
	void *random_ctx;
};

struct dpb_stats {
	uint64_t cycles;      /* handshake + CONNECT/CONNACK + DISCONNECT, completed */
	uint64_t failures;    /* cycles that ended otherwise (logged once) */
	int last_error;       /* mbedTLS or -E_* code of the last failure */
};

struct dpb;

/* Bytes of caller memory for dp with this configuration (its lower ops, lower_ctx and
 * shard are set by dpb). 0 if invalid. */
size_t dpb_mem_size(const struct dp_config *dcfg);
/* Build the client and a dp in mem (linked, 8-aligned). dcfg copied (its heap, clock,
 * hs_env and limits are the caller's). 0 or a negative error. */
MUST_CHECK int dpb_init(struct dpb **out /* out */, void *mem, size_t len, const struct dp_config *dcfg,
			const struct dpb_client_config *cc);
/* One bounded step of the current cycle. Returns 1 (the caller's loop stays busy). */
int dpb_step(struct dpb *b);
void dpb_stats_get(const struct dpb *b, struct dpb_stats *out /* out */);
/* End the cycle in progress and free the client and the dp. */
void dpb_fini(struct dpb *b);

#endif
