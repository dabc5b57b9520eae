/* SPDX-License-Identifier: MIT
 *
 * The diagnostics' bounds from the build-time configuration (the CONF_DIAG_* constants of
 * $(B)/gen/urmqtt_config.h, section [diag] of docs/CONFIGURATION.md), and their place in the
 * JSON report. The only file of kernel/diag/ that reads the configuration. Invariants (the
 * schema's ranges; asserted below on this build's values): every bound is non-zero; the chunk is a
 * multiple of 4 KiB and never larger than the read or the write size, so a chunk buffer
 * holds any request of either test. Portable, no allocation
 * (tests/unit/kernel/test_diag_limits.c).
 */
#include "kernel/diag/diag_int.h"

#include "lib/compiler.h"
#include "urmqtt_config.h"

/* The schema's ranges (tools/config/schema.c) make these true for every valid profile;
 * checked again here on the values this image is built with. */
STATIC_ASSERT(CONF_DIAG_MEASURE_MS >= 1u, "a measurement needs a window");
STATIC_ASSERT(CONF_DIAG_MEMORY_BUFFER_KB >= 1u && CONF_DIAG_MEMORY_BUFFER_KB < (1u << 22),
	      "the copy checks bytes 64 and 128; the size fits 32 bits");
STATIC_ASSERT(CONF_DIAG_DISK_CHUNK_KB >= 4u && CONF_DIAG_DISK_CHUNK_KB % 4u == 0 &&
		      CONF_DIAG_DISK_CHUNK_KB < (1u << 22),
	      "the disk chunk is a multiple of 4 KiB and fits 32 bits");
STATIC_ASSERT((uint64_t)CONF_DIAG_DISK_CHUNK_KB << 10 <= (uint64_t)CONF_DIAG_DISK_READ_MB << 20 &&
		      (uint64_t)CONF_DIAG_DISK_CHUNK_KB << 10 <= (uint64_t)CONF_DIAG_DISK_WRITE_MB << 20,
	      "the chunk never exceeds the read or the write size");
STATIC_ASSERT(CONF_DIAG_WIPE_PROMPT_S >= 1u && CONF_DIAG_WIPE_PROMPT_S <= 600u,
	      "a prompt the operator can answer; its milliseconds fit console_in_line");

void diag_limits_get(struct diag_limits *out, uint32_t wipe_prompt_s)
{
	*out = (struct diag_limits){
		.measure_ms = CONF_DIAG_MEASURE_MS,
		.mem_buf_bytes = (uint32_t)CONF_DIAG_MEMORY_BUFFER_KB << 10,
		.disk_read_bytes = (uint64_t)CONF_DIAG_DISK_READ_MB << 20,
		.disk_write_bytes = (uint64_t)CONF_DIAG_DISK_WRITE_MB << 20,
		.disk_chunk_bytes = (uint32_t)CONF_DIAG_DISK_CHUNK_KB << 10,
		.wipe_prompt_s = wipe_prompt_s ? wipe_prompt_s : CONF_DIAG_WIPE_PROMPT_S,
	};
}

void diag_limits_json(struct diag_json *j, const struct diag_limits *l)
{
	diag_json_obj_begin(j, "limits");
	diag_json_u64(j, "measure_ms", l->measure_ms);
	diag_json_u64(j, "memory_buffer_bytes", l->mem_buf_bytes);
	diag_json_u64(j, "disk_read_bytes", l->disk_read_bytes);
	diag_json_u64(j, "disk_write_bytes", l->disk_write_bytes);
	diag_json_u64(j, "disk_chunk_bytes", l->disk_chunk_bytes);
	diag_json_u64(j, "wipe_prompt_s", l->wipe_prompt_s);
	diag_json_obj_end(j);
}
