/* SPDX-License-Identifier: MIT
 *
 * Device bring-up on x86_64: PCI enumeration over the drivers' port (drv_port.c, ECAM from
 * the ACPI MCFG or the legacy ports), and the BARs of every virtio function mapped before
 * the page tables are sealed; then, once the page allocator and the CSPRNG exist, the
 * wall clock from the CMOS RTC and the node's devices (kernel/node/devices.c: virtio
 * probing and drivers, the TLS self-test, the node). The MSI-X messages that reach a
 * core are node_port.c's. Owns the PCI device table. Never maps anything after the seal.
 */
#include "arch/x86_64/x86.h"
#include "kernel/log.h"
#include "kernel/node/devices.h"
#include "lib/err.h"

#define DEV_MAX_PCI 64

static struct pci_dev dev_pci[DEV_MAX_PCI];
static struct pci_bus dev_bus;
static struct pci_range dev_forbid[PLAT_MAX_MEM_RANGES + 2];
static const char *dev_cfg_how;
static bool dev_scanned;
static int dev_scan_err;

void x86_dev_scan(const struct platform *p, const struct x86_mem_range *ram, uint32_t n_ram)
{
	int err = x86_drv_port_init(p, &dev_cfg_how);
	if (err) {
		dev_scan_err = err;
		return;
	}
	uint32_t n = 0;
	for (uint32_t i = 0; i < n_ram && n < PLAT_MAX_MEM_RANGES; i++)
		dev_forbid[n++] = (struct pci_range){ ram[i].base, ram[i].len };
	dev_forbid[n++] = (struct pci_range){ x86_virt_to_phys_image(x86_image_start),
					      (uint64_t)(x86_image_end - x86_image_start) };
	dev_forbid[n++] = (struct pci_range){ 0, 1u << 20 }; /* real-mode area and BIOS */
	struct pci_config pc = {
		.devs = dev_pci,
		.max_devs = DEV_MAX_PCI,
		.forbidden = dev_forbid,
		.n_forbidden = n,
		.max_caps = PCI_MAX_CAPS,
	};
	x86_drv_port_buses(&pc.bus_start, &pc.bus_end);
	err = pci_bus_init(&dev_bus, x86_drv_port(), &pc);
	if (!err)
		err = pci_bus_scan(&dev_bus);
	dev_scan_err = err;
	dev_scanned = dev_bus.n_devs > 0;
	/* Map every usable memory BAR of every virtio function now: after the seal nothing
	 * new can be mapped, and the drivers reach their registers only through these. */
	uint32_t unmapped = node_devices_map_bars(&dev_bus);
	if (unmapped)
		LOG_WARN("pci", "%u virtio BAR(s) could not be mapped", (unsigned)unmapped);
}

void x86_dev_init(const char *cmdline, size_t cmdline_len, uint32_t n_cores)
{
	x86_wall_clock_init(cmdline, cmdline_len); /* certificates are checked against it from the self-test on */
	const struct node_devices_config dc = {
		.bus = dev_scanned ? &dev_bus : NULL, .cfg_how = dev_cfg_how, .scan_err = dev_scan_err,
		.cmdline = cmdline, .cmdline_len = cmdline_len, .n_cores = n_cores,
	};
	node_devices_init(&dc);
}

struct pci_bus *x86_dev_bus(const char **how)
{
	*how = dev_cfg_how;
	return dev_scanned ? &dev_bus : NULL;
}
