/* SPDX-License-Identifier: MIT
 *
 * Private to drivers/: the diagnostic-line helper shared by the drivers. Never included
 * from outside the directory.
 */
#ifndef DRIVERS_DRV_INT_H
#define DRIVERS_DRV_INT_H

#include "drivers/port.h"

/* Format one line (bounded, truncated at 160 bytes) and hand it to port->log. */
void drv_logf(const struct drv_port *port, const char *fmt, ...) PRINTF_LIKE(2, 3);

#endif
