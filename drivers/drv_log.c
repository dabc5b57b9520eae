/* SPDX-License-Identifier: MIT
 *
 * drivers/: bounded diagnostic lines through the port's log op. Never allocates and never
 * prints pointers.
 */
#include <stdarg.h>

#include "drivers/drv_int.h"
#include "lib/fmt.h"

void drv_logf(const struct drv_port *port, const char *fmt, ...)
{
	char line[160];
	va_list ap;

	if (!port || !port->log)
		return;
	va_start(ap, fmt);
	(void)fmt_vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	port->log(port->ctx, line);
}
