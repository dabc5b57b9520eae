/* SPDX-License-Identifier: MIT
 *
 * SipHash-2-4 with a 64-bit output, written from the reference paper's description.
 * Stateless; reads the input bytewise little-endian so any alignment works.
 */
#include "lib/siphash.h"
#include "lib/bytes.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

struct sip_state {
	uint64_t v0, v1, v2, v3;
};

static void sip_round(struct sip_state *s)
{
	s->v0 += s->v1;
	s->v1 = ROTL(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = ROTL(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = ROTL(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = ROTL(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = ROTL(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = ROTL(s->v2, 32);
}

static void sip_absorb(struct sip_state *s, uint64_t m)
{
	s->v3 ^= m;
	sip_round(s);
	sip_round(s);
	s->v0 ^= m;
}

struct siphash_key siphash_key_from_bytes(const uint8_t bytes[16])
{
	struct siphash_key k = { ld_le64(bytes), ld_le64(bytes + 8) };
	return k;
}

uint64_t siphash24(const struct siphash_key *key, const void *data, size_t len)
{
	const uint8_t *p = data;
	struct sip_state s = {
		key->k0 ^ 0x736f6d6570736575ull,
		key->k1 ^ 0x646f72616e646f6dull,
		key->k0 ^ 0x6c7967656e657261ull,
		key->k1 ^ 0x7465646279746573ull,
	};
	uint64_t last = (uint64_t)(len & 0xff) << 56;
	size_t tail = len & 7;

	for (; len >= 8; len -= 8, p += 8)
		sip_absorb(&s, ld_le64(p));
	for (size_t i = 0; i < tail; i++)
		last |= (uint64_t)p[i] << (8 * i);
	sip_absorb(&s, last);
	s.v2 ^= 0xff;
	for (int i = 0; i < 4; i++)
		sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
