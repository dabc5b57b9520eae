/* SPDX-License-Identifier: MIT */
/* tls/accel, aarch64 and any architecture whose assembly needs no feature probe: ecp_nistz256's
 * Armv8 code uses only the base instruction set, and X25519 is portable C. */
#include "tls/accel/accel.h"
#include "tls/accel/cpu.h"

void accel_cpu_init(void)
{
}

void accel_cpu_use_optional(bool on)
{
	(void)on;
}

const char *accel_cpu_describe(void)
{
	return "P-256 nistz256 Armv8, X25519 portable C";
}
