/* SPDX-License-Identifier: MIT
 *
 * Receive-side scaling in software: the Toeplitz hash as RSS defines it (the hash
 * multiqueue NICs and virtio-net's VIRTIO_NET_F_RSS / VIRTIO_NET_F_HASH_REPORT compute) and
 * a steering object that maps a flow to a worker core through an indirection table. With
 * a single-queue NIC, core 0 uses it to pick the worker for every received IPv4 flow; with
 * a device that hashes, the same key and table give the same answer as the device.
 *
 * Owns: the hash, the precomputed per-key lookup table, the RSS input layouts, and the
 * indirection table's contents. Never parses frames (the caller hands over the addresses
 * and ports it already read through the cursor), never allocates (the caller provides the
 * steering object and its indirection array), never draws randomness (the caller passes
 * the key: from configuration or from the CSPRNG at init). Nothing here is thread-safe:
 * a steering object belongs to the core that steers; rss_steer_flow() only reads it.
 *
 * Bit order follows the RSS definition: the input is read from its first byte's most
 * significant bit onwards; for every set input bit the 32 key bits starting at the same
 * bit position are XORed into the result. A key of key_len bytes therefore hashes at most
 * key_len - 4 input bytes (a 40-byte key covers the 36 bytes of IPv6 + ports).
 */
#ifndef NET_RSS_H
#define NET_RSS_H

#include "lib/compiler.h"

/* The key length every RSS device uses (and virtio-net's rss_max_key_size allows). */
#define RSS_KEY_LEN 40
/* Input layouts (all fields in network byte order, in this order):
 * IPv4 + TCP: source address, destination address, source port, destination port;
 * IPv4 only (non-TCP, or fragments): source address, destination address. */
#define RSS_INPUT_V4_TCP_LEN 12
#define RSS_INPUT_V4_LEN 8
/* Input bytes the precomputed table covers: the longest IPv4 layout. */
#define RSS_TABLE_BYTES RSS_INPUT_V4_TCP_LEN
/* Structural bounds on the indirection table (the configured size must lie within):
 * entries are 16-bit worker indices as in virtio-net's indirection_table, and the
 * largest table virtio-net can describe has 2^15 entries. */
#define RSS_INDIR_MAX 32768u
#define RSS_WORKERS_MAX 65535u

/* The Toeplitz hash, computed bit by bit exactly as the definition reads (the reference
 * for everything faster). `key` (key_len bytes) and `input` (input_len bytes) are
 * borrowed. Returns 0 and sets *hash, or -E_RANGE when key_len < input_len + 4 (the key
 * does not cover the input). Pure; callable from any context. */
MUST_CHECK int rss_toeplitz(const uint8_t *key, size_t key_len, const uint8_t *input,
			    size_t input_len, uint32_t *hash /* out */);

/* A key expanded for byte-at-a-time hashing: win[i][v] is the hash contribution of input
 * byte i having value v, so hashing n bytes costs n loads and XORs. 12 KiB; the caller
 * owns it (typically inside struct rss_steer). Its fields are private. */
struct rss_table {
	uint32_t win[RSS_TABLE_BYTES][256];
	uint32_t n_bytes; /* input bytes covered: min(key_len - 4, RSS_TABLE_BYTES) */
};

/* Expand `key` (borrowed, key_len bytes, at least RSS_INPUT_V4_LEN + 4) into `t`.
 * Returns 0, or -E_RANGE for a key too short to hash an IPv4 address pair. */
MUST_CHECK int rss_table_init(struct rss_table *t /* out */, const uint8_t *key,
			      size_t key_len);
/* The Toeplitz hash of `input` (borrowed, input_len bytes) through the table; equal to
 * rss_toeplitz() with the key the table was built from. Returns 0 and sets *hash, or
 * -E_RANGE when input_len exceeds what the table covers. Pure. */
MUST_CHECK int rss_table_hash(const struct rss_table *t, const uint8_t *input,
			      size_t input_len, uint32_t *hash /* out */);

/* Write the RSS input for an IPv4/TCP flow or an IPv4 address pair. Addresses and ports
 * are host-order values as net/ passes them (10.0.2.15 == 0x0a00020f), source and
 * destination as they appear in the received packet; the bytes are in network order. */
void rss_input_v4_tcp(uint8_t out[RSS_INPUT_V4_TCP_LEN] /* out */, uint32_t src_ip,
		      uint32_t dst_ip, uint16_t src_port, uint16_t dst_port);
void rss_input_v4(uint8_t out[RSS_INPUT_V4_LEN] /* out */, uint32_t src_ip,
		  uint32_t dst_ip);

/* Steering configuration, filled by the caller from the configuration file. */
struct rss_config {
	const uint8_t *key;  /* borrowed for rss_steer_init, copied: RSS_KEY_LEN bytes */
	uint32_t n_workers;  /* 1..RSS_WORKERS_MAX worker cores to spread flows over */
	uint32_t n_indir;    /* indirection entries: a power of two, n_workers..RSS_INDIR_MAX */
	uint16_t *indir;     /* linked: n_indir entries, owned by the caller, must outlive the
			      * object; filled by rss_steer_init */
};

/* Design note — the steering object.
 * Invariants:
 *   1. n_indir is a power of two with n_workers <= n_indir <= RSS_INDIR_MAX, so the low
 *      log2(n_indir) hash bits index the table (as a device masks with
 *      indirection_table_mask).
 *   2. Every indir[] entry is < n_workers: steering always names an existing worker.
 *   3. table was built from key and never changes after init; key is what a device must
 *      be given to agree with software steering.
 * States: (uninitialised) --rss_steer_init--> READY --rss_steer_set_entry /
 * rss_steer_shrink--> READY. There is no teardown: the object holds no resources besides
 * the caller's memory. A device programmed with key[] and indir[0 .. n_indir) (virtio-net
 * VIRTIO_NET_F_RSS, hash type TCPv4) picks the same worker as rss_steer_flow. */
struct rss_steer { /* fields private to net/rss.c; read key[] to program a device */
	uint8_t key[RSS_KEY_LEN];
	struct rss_table table;
	uint16_t *indir;
	uint32_t n_indir;
	uint32_t n_workers;
	uint32_t mask; /* n_indir - 1 */
};

/* Validate `cfg` (borrowed), copy the key, expand it and fill the indirection table
 * round-robin (entry i -> worker i % n_workers). Returns 0, or -E_INVAL for a missing
 * key or indirection array, -E_RANGE for a worker count or table size outside the bounds
 * of invariant 1. On error *s is left unusable. */
MUST_CHECK int rss_steer_init(struct rss_steer *s /* out */, const struct rss_config *cfg);

/* Steering: the worker index (< n_workers) for a received packet. Read-only on the
 * object, nothing fails, nothing is counted; called on the steering core only. */
/* The worker for a received IPv4/TCP segment (src/dst as in the packet, host order). */
uint32_t rss_steer_flow(const struct rss_steer *s, uint32_t src_ip, uint32_t dst_ip,
			uint16_t src_port, uint16_t dst_port);
/* The worker for a received IPv4 packet that is not TCP (or is a fragment). */
uint32_t rss_steer_ipv4(const struct rss_steer *s, uint32_t src_ip, uint32_t dst_ip);
/* The worker for a hash the device already computed (VIRTIO_NET_F_HASH_REPORT). */
uint32_t rss_steer_hash(const struct rss_steer *s, uint32_t hash);

/* Point indirection entry `idx` at `worker` (rebalancing). Returns 0, or -E_RANGE when
 * idx >= n_indir or worker >= n_workers (invariant 2). Core-local: must not race
 * rss_steer_flow() on another core. */
MUST_CHECK int rss_steer_set_entry(struct rss_steer *s, uint32_t idx, uint32_t worker);

/* Use only the first n_indir entries (a device's indirection table may be shorter than the
 * configured one): refilled round-robin like rss_steer_init. Returns 0, or -E_RANGE unless
 * n_indir is a power of two with n_workers <= n_indir <= the current n_indir (the caller's
 * array is never outgrown). Core-local, before any other core reads the object. */
MUST_CHECK int rss_steer_shrink(struct rss_steer *s, uint32_t n_indir);

/* The indirection table as a device takes it: *n_indir entries (borrowed: the caller's
 * array). */
const uint16_t *rss_steer_indir(const struct rss_steer *s, uint32_t *n_indir /* out */);

/* Invariants 1-3 hold (for tests and debug checks). */
bool rss_steer_check_invariants(const struct rss_steer *s);

#endif
