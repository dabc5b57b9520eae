/* SPDX-License-Identifier: MIT
 *
 * Generators of the build-time configuration: the C constants header the image is
 * compiled with, and docs/CONFIGURATION.md from the schema alone. Host only (stdio).
 * Output is deterministic: the same input gives the same bytes (no dates, no paths
 * beyond the name the caller passes).
 */
#ifndef TOOLS_CONFIG_CONFGEN_H
#define TOOLS_CONFIG_CONFGEN_H

#include <stdio.h>

#include "tools/config/conf.h"

/* Write the constants header for `doc` (borrowed) to `out` (borrowed). `source` names
 * the configuration file in the header's comment. 0, or -1 when a write failed. */
int confgen_header(FILE *out, const struct conf_doc *doc, const char *source) MUST_CHECK;

/* Write docs/CONFIGURATION.md (generated from conf_schema) to `out`. 0 or -1. */
int confgen_doc(FILE *out) MUST_CHECK;

#endif
