// SPDX-License-Identifier: MIT
/*
 * tools/loadgen: the benchmark's MQTT-over-mTLS load generator (host tool, OpenSSL).
 * Shared declarations between its files only; never included by broker code.
 */
#ifndef URMQTT_TOOLS_LOADGEN_H
#define URMQTT_TOOLS_LOADGEN_H

/* N device certificates load-1..N signed by CA_DIR/ca.{crt,key} into OUT (cached:
 * regenerated only when the CA changed or load-N is missing). 0 or -1 (printed). */
int loadgen_mkcerts(const char *ca_dir, const char *out, unsigned n);

#endif
