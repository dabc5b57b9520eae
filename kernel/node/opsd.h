/* SPDX-License-Identifier: MIT
 *
 * What operators see of a running node without a shell (kernel/node/opsd.c): every core's
 * log lines sent to the syslog collectors (RFC 5424 over UDP), every core's figures
 * gathered on core 0 into the broker's health (logged when it changes) and sent to the
 * statsd servers and as retained $SYS/... messages to the services allowed to read them, and
 * the SNTP client whose agreed time becomes the wall clock's reference.
 * The formats and decisions are ops/'s pure functions; this file owns the rings between
 * the cores and core 0's schedule.
 *
 * Contract: opsd_init once on the boot core before the other cores start (it installs the
 * log tap); opsd_publish on each core, for itself only; opsd_poll is core 0's loop handler.
 * Cores share nothing here but two SPSC rings per core towards core 0 (log lines, figures).
 */
#ifndef KERNEL_NODE_OPSD_H
#define KERNEL_NODE_OPSD_H

#include "lib/compiler.h"
#include "mqtt/broker.h"

struct net_stack;
struct node_broker;

/* One core's figures, as statsd names them ("<prefix>.<name>" for the sum over the cores,
 * "<prefix>.core<N>.<name>" per core). Gauges are levels, counters totals since boot (sent
 * to statsd as the change since the last datagram). */
enum opsd_fig {
	OPSD_F_CONNECTIONS,        /* gauge: TCP connections with a TLS or MQTT state */
	OPSD_F_HANDSHAKING,        /* gauge: TLS handshakes in progress */
	OPSD_F_SESSIONS,           /* gauge: MQTT sessions homed on the core */
	OPSD_F_RETAINED,           /* gauge: retained messages (every shard holds all: the total is the largest) */
	OPSD_F_HEAP_USED,          /* gauge: bytes of the core's broker heap in use */
	OPSD_F_HEAP_FREE,          /* gauge: bytes it may still take */
	OPSD_F_STORE_BACKLOG,      /* gauge: bytes waiting for the storage core */
	OPSD_F_STORE_LAGGING,      /* gauge: 1 while storage lags (new connections are refused) */
	OPSD_F_SERVING,            /* gauge: 1 once the core takes connections (restore done) */
	OPSD_F_HS_FULL,            /* counter: full handshakes completed */
	OPSD_F_HS_RESUMED,         /* counter: resumed handshakes completed */
	OPSD_F_HS_FAILED,          /* counter: handshakes refused (alert sent) */
	OPSD_F_HS_TIMEOUTS,        /* counter: handshakes that did not finish in time */
	OPSD_F_REFUSED_HEAP,       /* counter: connections refused at admission: heap low */
	OPSD_F_REFUSED_SOURCE,     /* counter: ... too many handshakes from one address */
	OPSD_F_REFUSED_LOAD,       /* counter: ... handshake slots, records or rate full */
	OPSD_F_REFUSED_STORAGE,    /* counter: ... storage not ready or lagging */
	OPSD_F_REFUSED_IDENTITY,   /* counter: certificate identity refused after the handshake */
	OPSD_F_REFUSED_CONNACK,    /* counter: CONNECT refused (CONNACK with an error code) */
	OPSD_F_REFUSED_ACL,        /* counter: PUBLISH or SUBSCRIBE denied by the ACL */
	OPSD_F_REFUSED_RATE,       /* counter: PUBLISH over the identity's rate limit */
	OPSD_F_MSGS_IN_QOS0,       /* counter: PUBLISH received, by QoS */
	OPSD_F_MSGS_IN_QOS1,
	OPSD_F_MSGS_IN_QOS2,
	OPSD_F_MSGS_OUT_QOS0,      /* counter: PUBLISH sent, by QoS */
	OPSD_F_MSGS_OUT_QOS1,
	OPSD_F_MSGS_OUT_QOS2,
	OPSD_F_BYTES_IN,           /* counter: TLS payload bytes received */
	OPSD_F_BYTES_OUT,          /* counter: ... sent */
	OPSD_F_QUEUE_DROPPED,      /* counter: messages an offline queue dropped or refused */
	OPSD_F_ROUTE_DROPPED,      /* counter: QoS 0 messages dropped between shards (links full, or over the fair share: ADR-075) */
	OPSD_F_TELEMETRY_RECORDS,  /* counter: telemetry records handed to storage */
	OPSD_F_TELEMETRY_LOST,     /* counter: ... refused by the storage link */
	OPSD_F_WATCHDOG_OVERRUNS,  /* counter: loop handlers over core.watchdog_budget_ms */
	OPSD_F_SYSLOG_DROPPED,     /* counter: log lines dropped before core 0 sent them */
	/* the storage core's (kstore_figures) */
	OPSD_F_DB_COMMITS,         /* counter: database commits */
	OPSD_F_DB_COMMIT_FAILED,   /* counter: ... that failed */
	OPSD_F_DB_COMMIT_US_MAX,   /* gauge: the slowest commit since boot (us) */
	OPSD_F_DISK_ERRORS,        /* counter: data disk requests that failed */
	OPSD_F_STORE_FAILED,       /* gauge: 1 once storage is off after a failure */
	OPSD_F__COUNT
};

/* Identities per core sent as statsd gauges "<prefix>.core<N>.droppers.<device|service>.
 * <id>.<links|fair|queue>" (mqtt_dropper_metric): only the three that lost most QoS 0
 * messages there (ADR-075), so each datagram carries at most 9 such names per core and a
 * name exists only for an identity that was once among a core's three biggest droppers. */
#define OPSD_DROPPERS 3u

struct opsd_figures {
	uint64_t v[OPSD_F__COUNT];
	uint32_t n_droppers;                          /* <= OPSD_DROPPERS */
	struct mqtt_dropper droppers[OPSD_DROPPERS]; /* most drops first (mqtt_broker_droppers) */
};

/* Build the rings for n_cores cores (0 .. n_cores - 1: every core that logs), bind the
 * SNTP port on core 0's stack ns0 (linked; NULL: no network, only the health), publish
 * $SYS through core 0's broker b0 (linked; NULL: no $SYS), install
 * the log tap when syslog collectors are configured. cmdline: development knobs
 * (ops_syslog=, ops_statsd=, ntp_servers=, ntp_poll_s=; see opsd.c). 0, or -E_NOMEM /
 * -E_INVAL (logged; the node runs without syslog then). Boot core, before the cores start. */
MUST_CHECK int opsd_init(uint32_t n_cores, struct net_stack *ns0, struct node_broker *b0, const char *cmdline,
			 size_t cmdline_len);
/* This core's figures for core 0 (f borrowed; the calling core is `core`, any core).
 * Dropped when core 0 has not taken the previous ones yet. */
void opsd_publish(uint32_t core, const struct opsd_figures *f);
/* Core 0's loop handler: log lines to syslog, the health once a second, statsd every
 * ops.statsd_interval_s, $SYS every ops.sys_interval_s, SNTP every ntp.poll_s. Returns
 * the work done (0: idle). */
int opsd_poll(void *ctx);

#endif
