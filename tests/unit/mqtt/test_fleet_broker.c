/* SPDX-License-Identifier: MIT
 * The broker with a fleet's ring (mqtt/fleet.h, ADR-072), in process through the broker
 * harness: an MQTT 5.0 device whose home is another appliance gets CONNACK 0x9C (Use another
 * server) with that appliance's "host:port" as Server Reference and nothing else, its
 * connection ends and no session is made; a device at home, a 3.1.1 device and a service
 * are accepted whatever the ring says; without a ring nobody is redirected. The teardown
 * checks the invariants and that the heap got everything back. */
#include "tests/unit/mqtt/broker_harness.h"

#include "mqtt/fleet.h"
#include "mqtt/props.h"

static struct mqtt_fleet ring;
static const char *const members[] = { "a=10.79.1.2:8883", "b=10.79.2.2:8883", "c=mqtt-c.example.com:18883" };

/* The ring, this appliance "a". */
static void ring_build(void)
{
	uint8_t key[MQTT_FLEET_KEY_LEN];
	const char *why = NULL;
	assert_int_equal(mqtt_fleet_key_parse("75726d7174742d666c6565742d6b6579", 32, key), 0);
	assert_int_equal(mqtt_fleet_init(&ring, members, 3, "a", 1, key, 256, &why), 0);
}

/* The first "<prefix><n>" whose home is member `home` (written into buf). */
static const char *id_homed(const char *prefix, uint32_t home, char *buf, size_t cap)
{
	for (uint32_t n = 0; n < 10000; n++) {
		snprintf(buf, cap, "%s%u", prefix, n);
		if (mqtt_fleet_home(&ring, (const uint8_t *)buf, strlen(buf)) == home)
			return buf;
	}
	fail_msg("no identity homed at %u", home);
	return NULL;
}

/* A 5.0 CONNECT (clean start) with client id `id` and Maximum Packet Size max_packet (0:
 * none). */
static size_t connect5_pkt(uint8_t *out, const char *id, uint32_t max_packet)
{
	size_t il = strlen(id), n = 0;
	static const uint8_t vh[] = { 0, 4, 'M', 'Q', 'T', 'T', 5, 0x02, 0, 0 };
	uint8_t props[5] = { 0x27, (uint8_t)(max_packet >> 24), (uint8_t)(max_packet >> 16), (uint8_t)(max_packet >> 8),
			     (uint8_t)max_packet };
	size_t pl = max_packet ? sizeof props : 0;
	out[n++] = 0x10;
	out[n++] = (uint8_t)(sizeof vh + 1u + pl + 2u + il);
	memcpy(out + n, vh, sizeof vh);
	n += sizeof vh;
	out[n++] = (uint8_t)pl;
	memcpy(out + n, props, pl);
	n += pl;
	out[n++] = 0;
	out[n++] = (uint8_t)il;
	memcpy(out + n, id, il);
	return n + il;
}

/* Connect cl (5.0) as id, with Maximum Packet Size max_packet (0: none); the CONNACK's reason
 * code, and its Server Reference in ref (out, "" when there is none). */
static uint8_t connect5_mp(struct client *cl, const char *id, uint32_t max_packet, char *ref, size_t cap)
{
	uint8_t pkt[96], t, f;
	const uint8_t *b;
	size_t len;
	int rc = cl_in(cl, pkt, connect5_pkt(pkt, id, max_packet));
	assert_true(rc == 0 || rc == -E_CLOSED);
	assert_true(cl_next(cl, &t, &f, &b, &len));
	assert_int_equal(t, MQTT_CONNACK);
	assert_true(len >= 3 && b[2] < 128 && len == 3u + b[2]);
	ref[0] = 0;
	for (size_t i = 3; i < len;) { /* the properties this test needs: byte, 2-byte, 4-byte, strings */
		uint8_t id_ = b[i++];
		if (id_ == 0x1C || id_ == 0x1F || id_ == 0x12 || id_ == 0x1A) {
			size_t sl = (size_t)(b[i] << 8 | b[i + 1]);
			if (id_ == 0x1C)
				snprintf(ref, cap, "%.*s", (int)sl, (const char *)b + i + 2);
			i += 2u + sl;
		} else if (id_ == 0x21 || id_ == 0x22 || id_ == 0x13) {
			i += 2;
		} else if (id_ == 0x11 || id_ == 0x27) {
			i += 4;
		} else {
			i += 1;
		}
	}
	expect_none(cl);
	return b[1];
}

static uint8_t connect5_ref(struct client *cl, const char *id, char *ref, size_t cap)
{
	return connect5_mp(cl, id, 0, ref, cap);
}

static void test_redirect_5_device(void **state)
{
	(void)state;
	ring_build();
	struct mqtt_broker_config g = base_cfg();
	g.fleet = &ring;
	restart(&g);
	char away_b[32], away_c[32], home[32], ref[300];
	id_homed("dev-", 1, away_b, sizeof away_b);
	id_homed("dev-", 2, away_c, sizeof away_c);
	id_homed("dev-", 0, home, sizeof home);

	struct client *d = cl_new(away_b, MQTT_ID_DEVICE);
	assert_int_equal(connect5_ref(d, away_b, ref, sizeof ref), MQTT_RC_USE_ANOTHER_SERVER);
	assert_string_equal(ref, "10.79.2.2:8883");
	assert_true(d->closed);
	cl_free(d);
	d = cl_new(away_c, MQTT_ID_DEVICE);
	assert_int_equal(connect5_ref(d, away_c, ref, sizeof ref), MQTT_RC_USE_ANOTHER_SERVER);
	assert_string_equal(ref, "mqtt-c.example.com:18883");
	assert_true(d->closed);
	cl_free(d);
	/* a Maximum Packet Size the reference does not fit: 0x9C alone [MQTT-3.1.2-24] */
	d = cl_new(away_c, MQTT_ID_DEVICE);
	assert_int_equal(connect5_mp(d, away_c, 20, ref, sizeof ref), MQTT_RC_USE_ANOTHER_SERVER);
	assert_string_equal(ref, "");
	assert_true(d->closed);
	cl_free(d);
	d = cl_new(away_c, MQTT_ID_DEVICE);
	assert_int_equal(connect5_mp(d, away_c, 32, ref, sizeof ref), MQTT_RC_USE_ANOTHER_SERVER);
	assert_string_equal(ref, "mqtt-c.example.com:18883"); /* 5 + 3 + 24 = 32 bytes: fits */
	cl_free(d);
	assert_int_equal(mqtt_broker_stats(B)->redirected, 4);
	assert_int_equal(mqtt_broker_stats(B)->connack_refused, 0);
	struct mqtt_broker_usage u;
	mqtt_broker_usage(B, &u);
	assert_int_equal(u.sessions, 0); /* nothing was made for them */

	/* at home: accepted, no Server Reference */
	d = cl_new(home, MQTT_ID_DEVICE);
	assert_int_equal(connect5_ref(d, home, ref, sizeof ref), 0);
	assert_string_equal(ref, "");
	assert_false(d->closed);
	cl_free(d);

	/* 3.1.1 is never redirected (per-appliance DNS names route it: ADR-072) */
	d = cl_new(away_b, MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, away_b, true), MQTT_CONNACK_ACCEPTED);
	assert_false(d->closed);
	cl_free(d);

	/* a service whose identity hashes elsewhere: backends connect to every appliance */
	char svc[32];
	id_homed("svc", 2, svc, sizeof svc);
	char cid[48];
	snprintf(cid, sizeof cid, "%s/backend", svc);
	struct client *s = cl_new(svc, MQTT_ID_SERVICE);
	assert_int_equal(connect5_ref(s, cid, ref, sizeof ref), 0);
	assert_false(s->closed);
	cl_free(s);
	assert_int_equal(mqtt_broker_stats(B)->redirected, 4);
	/* the client id is checked first: a device sending another's id is refused, not sent on */
	d = cl_new(away_b, MQTT_ID_DEVICE);
	assert_int_equal(connect5_ref(d, home, ref, sizeof ref), MQTT_RC_NOT_AUTHORIZED);
	assert_string_equal(ref, "");
	cl_free(d);
}

static void test_no_ring_no_change(void **state)
{
	(void)state;
	ring_build();
	char away[32], ref[300];
	id_homed("dev-", 1, away, sizeof away);
	/* base_cfg(): fleet NULL */
	struct client *d = cl_new(away, MQTT_ID_DEVICE);
	assert_int_equal(connect5_ref(d, away, ref, sizeof ref), 0);
	assert_string_equal(ref, "");
	assert_false(d->closed);
	cl_free(d);
	assert_int_equal(mqtt_broker_stats(B)->redirected, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_redirect_5_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_ring_no_change, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
