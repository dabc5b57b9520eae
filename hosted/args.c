/* SPDX-License-Identifier: MIT
 *
 * The hosted program's command line: parsed into struct hosted_opts with every value
 * range-checked; never exits or prints (main.c reports the message it returns).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hosted/hosted.h"
#include "lib/err.h"
#include "mqtt/fleet.h"

static bool parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	if (!s || !*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* "a.b.c.d" exactly (no leading zeros beyond a single 0, no spaces). `end` gets the rest. */
static bool parse_ipv4(const char *s, uint32_t *ip, const char **end)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		uint32_t part = 0;
		int digits = 0;
		if (*s < '0' || *s > '9')
			return false;
		if (*s == '0' && s[1] >= '0' && s[1] <= '9')
			return false;
		while (*s >= '0' && *s <= '9' && digits < 4) {
			part = part * 10 + (uint32_t)(*s++ - '0');
			digits++;
		}
		if (part > 255)
			return false;
		v = v << 8 | part;
		if (i < 3 && *s++ != '.')
			return false;
	}
	*ip = v;
	*end = s;
	return true;
}

static bool parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;
	/* Fixed length and two-digit fields: sscanf cannot overflow here, and the count check
	 * rejects anything that is not exactly six hex pairs. */
	if (strlen(s) != 17 || sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], /* NOLINT(cert-err34-c) */
				      &b[3], &b[4], &b[5], &tail) != 6)
		return false;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return (mac[0] & 1) == 0 && (mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]);
}

static bool parse_impair(const char *s, struct hosted_opts *o)
{
	char buf[64];
	char *a, *b, *c;
	if (strlen(s) >= sizeof buf)
		return false;
	strcpy(buf, s);
	a = buf;
	b = strchr(a, ',');
	if (!b)
		return false;
	*b++ = 0;
	c = strchr(b, ',');
	if (!c)
		return false;
	*c++ = 0;
	return parse_u32(a, 0, 100, &o->loss_pct) && parse_u32(b, 0, 100, &o->reorder_pct) &&
	       parse_u32(c, 0, 10000, &o->delay_ms);
}

void hosted_opts_usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s --tap NAME (--ip A.B.C.D/NN [--gw A.B.C.D] | --dhcp) [options]\n"
		"  --mac XX:XX:XX:XX:XX:XX   our MAC (default: random, locally administered)\n"
		"  --echo-port N             TCP echo service port (default 7)\n"
		"  --max-conn N              TCP connections (default 1024)\n"
		"  --frames N                frame pool size (default 1024)\n"
		"  --echo-bufs N             echo ring buffers (default 64)\n"
		"  --echo-buf-size BYTES     bytes per echo ring (default 65536)\n"
		"  --mtu N                   IPv4 MTU (default 1500)\n"
		"  --tick-ms N               TCP timer granularity (default 2)\n"
		"  --stats-ms N              stats line period, 0: off (default 5000)\n"
		"  --impair LOSS,REORDER,MS  impair the link like netem (percent, percent, ms)\n"
		"  --impair-dir rx|tx|both   which direction --impair applies to (default rx:\n"
		"                            frames to us, like netem on the TAP's Linux side)\n"
		"  --seed N                  impairment seed (default: random)\n"
		"  --disk FILE               a file as the disk (read test at start-up; with --broker,\n"
		"                            storage: formatted when blank, sessions kept on it)\n"
		"  --disk-mib N              create or extend the disk file to N MiB\n"
		"  --pcap FILE               capture the frames the stack sees and sends\n"
		"  --run-ms N                exit after N ms (default: until SIGINT/SIGTERM)\n"
		"  --broker                  MQTT over TLS 1.3 (mTLS) on the configured port\n"
		"                            instead of the echo service\n"
		"  --broker-stats-ms N       broker stats line period, 0: off (default 10000)\n"
		"  --client-id-policy P      require (default: the configuration's) or override\n"
		"  --no-telemetry-log        do not keep storage.telemetry_topics in the telemetry log\n"
		"                            (make bench: the same broker with the log off)\n"
		"  --no-curve-driver         P-256 and X25519 on mbedTLS's own code, not tls/accel's\n"
		"                            driver (make bench: the handshakes before and after)\n"
		"  --backup-s FIRST,INTERVAL the database backup's first delay and period in seconds\n"
		"                            (tests; default: the configuration's)\n"
		"  --scrub-kb-s N            the scrubber's budget in KiB/s, 0: off (make bench;\n"
		"                            default: storage.scrub_kb_per_s)\n"
		"  --fleet-member NAME=HOST:PORT  a member of the fleet's ring (repeat for each; with\n"
		"                            --fleet-self NAME, this appliance): instead of [fleet]\n",
		prog);
}

int hosted_opts_parse(struct hosted_opts *o, int argc, char **argv, const char **err)
{
	bool have_ip = false;
	uint32_t v;

	*o = (struct hosted_opts){
		.echo_port = 7,
		.max_conn = 1024,
		.frames = 1024,
		.echo_bufs = 64,
		.echo_buf_size = 65536,
		.tick_ms = 2,
		.stats_ms = 5000,
		.mtu = 1500,
		.impair_rx = true,
		.broker_stats_ms = 10000,
	};
	*err = NULL;
	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = true;
		*err = opt;
		if (!strcmp(opt, "--help") || !strcmp(opt, "-h"))
			return 1;
		if (!strcmp(opt, "--dhcp")) {
			o->dhcp = true;
			takes = false;
		} else if (!strcmp(opt, "--broker")) {
			o->broker = true;
			takes = false;
		} else if (!strcmp(opt, "--no-telemetry-log")) {
			o->storage.no_telemetry_log = true;
			takes = false;
		} else if (!strcmp(opt, "--no-curve-driver")) {
			o->no_curve_driver = true;
			takes = false;
		} else if (!val) {
			*err = "missing value";
			return -E_INVAL;
		} else if (!strcmp(opt, "--client-id-policy")) {
			if (!strcmp(val, "override"))
				o->client_id_override = true;
			else if (strcmp(val, "require") != 0) {
				*err = "--client-id-policy: require or override";
				return -E_INVAL;
			}
		} else if (!strcmp(opt, "--fleet-member")) {
			struct mqtt_fleet_member m;
			if (o->fleet.n >= HOSTED_FLEET_MAX || mqtt_fleet_member_parse(val, strlen(val), &m) != 0) {
				*err = "--fleet-member: name=host:port, at most 16";
				return -E_INVAL;
			}
			o->fleet.members[o->fleet.n++] = val;
		} else if (!strcmp(opt, "--fleet-self")) {
			o->fleet.self = val;
		} else if (!strcmp(opt, "--tap")) {
			o->tap = val;
		} else if (!strcmp(opt, "--ip")) {
			const char *rest;
			uint32_t plen;
			if (!parse_ipv4(val, &o->ip, &rest) || *rest != '/' ||
			    !parse_u32(rest + 1, 1, 30, &plen))
				return -E_INVAL;
			o->mask = ~0u << (32 - plen);
			have_ip = true;
		} else if (!strcmp(opt, "--gw")) {
			const char *rest;
			if (!parse_ipv4(val, &o->gw, &rest) || *rest)
				return -E_INVAL;
		} else if (!strcmp(opt, "--mac")) {
			if (!parse_mac(val, o->mac))
				return -E_INVAL;
			o->mac_set = true;
		} else if (!strcmp(opt, "--echo-port")) {
			if (!parse_u32(val, 1, 65535, &v))
				return -E_INVAL;
			o->echo_port = (uint16_t)v;
		} else if (!strcmp(opt, "--max-conn")) {
			if (!parse_u32(val, 1, 1u << 20, &o->max_conn))
				return -E_INVAL;
		} else if (!strcmp(opt, "--frames")) {
			if (!parse_u32(val, 64, 1u << 20, &o->frames))
				return -E_INVAL;
		} else if (!strcmp(opt, "--echo-bufs")) {
			if (!parse_u32(val, 1, 1u << 20, &o->echo_bufs))
				return -E_INVAL;
		} else if (!strcmp(opt, "--echo-buf-size")) {
			if (!parse_u32(val, 1024, 1u << 24, &o->echo_buf_size))
				return -E_INVAL;
		} else if (!strcmp(opt, "--mtu")) {
			if (!parse_u32(val, 576, 9000, &v))
				return -E_INVAL;
			o->mtu = (uint16_t)v;
		} else if (!strcmp(opt, "--tick-ms")) {
			if (!parse_u32(val, 1, 1000, &o->tick_ms))
				return -E_INVAL;
		} else if (!strcmp(opt, "--stats-ms")) {
			if (!parse_u32(val, 0, 3600000, &o->stats_ms))
				return -E_INVAL;
		} else if (!strcmp(opt, "--impair")) {
			if (!parse_impair(val, o))
				return -E_INVAL;
		} else if (!strcmp(opt, "--impair-dir")) {
			o->impair_rx = !strcmp(val, "rx") || !strcmp(val, "both");
			o->impair_tx = !strcmp(val, "tx") || !strcmp(val, "both");
			if (!o->impair_rx && !o->impair_tx)
				return -E_INVAL;
		} else if (!strcmp(opt, "--seed")) {
			char *end;
			errno = 0;
			o->seed = strtoull(val, &end, 0);
			if (errno || !*val || *end)
				return -E_INVAL;
		} else if (!strcmp(opt, "--backup-s")) {
			const char *comma = strchr(val, ',');
			char first[16];
			if (!comma || (size_t)(comma - val) >= sizeof first)
				return -E_INVAL;
			memcpy(first, val, (size_t)(comma - val));
			first[comma - val] = 0;
			if (!parse_u32(first, 1, 604800, &o->storage.backup_first_s) ||
			    !parse_u32(comma + 1, 1, 604800, &o->storage.backup_interval_s))
				return -E_INVAL;
		} else if (!strcmp(opt, "--scrub-kb-s")) {
			if (!parse_u32(val, 0, 1u << 20, &o->storage.scrub_kb_per_s))
				return -E_INVAL;
			o->storage.scrub_set = true;
		} else if (!strcmp(opt, "--disk")) {
			o->disk = val;
		} else if (!strcmp(opt, "--disk-mib")) {
			if (!parse_u32(val, 1, 1u << 20, &o->disk_mib))
				return -E_INVAL;
		} else if (!strcmp(opt, "--pcap")) {
			o->pcap = val;
		} else if (!strcmp(opt, "--broker-stats-ms")) {
			if (!parse_u32(val, 0, UINT32_MAX, &o->broker_stats_ms))
				return -E_INVAL;
		} else if (!strcmp(opt, "--run-ms")) {
			if (!parse_u32(val, 1, UINT32_MAX, &o->run_ms))
				return -E_INVAL;
		} else {
			*err = "unknown option";
			return -E_INVAL;
		}
		if (takes)
			i++;
	}
	if (!o->tap) {
		*err = "--tap is required";
		return -E_INVAL;
	}
	if (o->dhcp == have_ip) {
		*err = "exactly one of --ip and --dhcp is required";
		return -E_INVAL;
	}
	if (o->dhcp && o->gw) {
		*err = "--gw goes with --ip";
		return -E_INVAL;
	}
	if (!o->fleet.n != !o->fleet.self) {
		*err = "--fleet-member and --fleet-self go together";
		return -E_INVAL;
	}
	if (o->fleet.n && mqtt_fleet_check_list(o->fleet.members, o->fleet.n, o->fleet.self, strlen(o->fleet.self),
						 err) != 0)
		return -E_INVAL;
	*err = NULL;
	return 0;
}
