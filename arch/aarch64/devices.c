/* SPDX-License-Identifier: MIT
 *
 * Device bring-up on aarch64: PCI enumeration over the drivers' port (drv_port.c: ECAM of
 * the device tree's host bridge) before the MMU is on, with the memory BARs the firmware
 * left unassigned (QEMU's -kernel boot has no firmware) given addresses from the bridge's
 * windows (drivers/pci.c), and every virtio BAR recorded so the page tables map exactly
 * those; then, once the page allocator and the CSPRNG exist, the wall clock from the PL031
 * and the node's devices (kernel/node/devices.c: virtio probing and drivers, the TLS
 * self-test, the node). Owns the PCI device table. Never maps anything after the tables
 * are live.
 */
#include "arch/aarch64/a64.h"
#include "kernel/log.h"
#include "kernel/node/devices.h"
#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"

#define DEV_MAX_PCI 64

static struct pci_dev dev_pci[DEV_MAX_PCI];
static struct pci_bus dev_bus;
static struct pci_range dev_forbid[PLAT_MAX_MEM_RANGES + 2];
static bool dev_scanned;
static int dev_scan_err = -E_NOENT;
static char dev_how[96];

static void dev_raw(const char *s)
{
	a64_uart_write(s, strlen(s));
}

int a64_dev_scan(const struct platform *p, const struct pci_window *mem32, const struct pci_window *mem64,
		 uint64_t *ecam, uint64_t *ecam_len)
{
	int err = a64_drv_port_scan_begin(p, ecam, ecam_len);
	if (err) {
		dev_scan_err = err;
		return err;
	}
	uint32_t n = 0;
	for (uint32_t i = 0; i < p->n_mem && n < PLAT_MAX_MEM_RANGES; i++)
		dev_forbid[n++] = (struct pci_range){ p->mem[i].base, p->mem[i].len };
	dev_forbid[n++] = (struct pci_range){ *ecam, *ecam_len };
	struct pci_config pc = {
		.devs = dev_pci,
		.max_devs = DEV_MAX_PCI,
		.forbidden = dev_forbid,
		.n_forbidden = n,
		.max_caps = PCI_MAX_CAPS,
		.mem32 = *mem32,
		.mem64 = *mem64,
	};
	a64_drv_port_buses(&pc.bus_start, &pc.bus_end);
	err = pci_bus_init(&dev_bus, a64_drv_port(), &pc);
	if (!err)
		err = pci_bus_scan(&dev_bus);
	dev_scan_err = err;
	dev_scanned = dev_bus.n_devs > 0;
	/* Record every usable memory BAR of every virtio function (the tables map them). */
	if (node_devices_map_bars(&dev_bus))
		dev_raw("pci: virtio BARs could not be recorded for mapping (the device table is full)\n");
	a64_drv_port_scan_end();
	return err;
}

void a64_dev_init(uint64_t rtc_base, const char *cmdline, size_t cmdline_len, uint32_t n_cores)
{
	a64_wall_clock_init(rtc_base); /* certificates are checked against it from the self-test on */
	uint8_t b0, b1;
	a64_drv_port_buses(&b0, &b1);
	(void)fmt_snprintf(dev_how, sizeof dev_how, "ECAM, buses %u-%u, %u BARs assigned here",
			   (unsigned)b0, (unsigned)b1, (unsigned)dev_bus.stats.n_assigned_bars);
	const struct node_devices_config dc = {
		.bus = dev_scanned ? &dev_bus : NULL, .cfg_how = dev_how, .scan_err = dev_scan_err,
		.cmdline = cmdline, .cmdline_len = cmdline_len, .n_cores = n_cores,
	};
	node_devices_init(&dc);
}

struct pci_bus *a64_dev_bus(const char **how)
{
	uint8_t b0, b1;
	a64_drv_port_buses(&b0, &b1);
	(void)fmt_snprintf(dev_how, sizeof dev_how, "ECAM, buses %u-%u, %u BARs assigned here", (unsigned)b0,
			   (unsigned)b1, (unsigned)dev_bus.stats.n_assigned_bars);
	*how = dev_how;
	return dev_scanned ? &dev_bus : NULL;
}
