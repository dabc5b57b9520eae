# SPDX-License-Identifier: MIT
# drivers/: PCI (ECAM, BARs, capabilities, MSI-X) and virtio (transport, split queues,
# net, blk, scsi, rng). Portable: hardware is reached only through drivers/port.h.
PORTABLE_SRCS += drivers/drv_log.c drivers/pci.c drivers/virtqueue.c drivers/virtio.c drivers/virtio_net.c drivers/virtio_blk.c drivers/virtio_rng.c drivers/virtio_scsi.c
PORTABLE_SRCS += drivers/blk_selftest.c
# Host tests: the simulated platform and virtio device.
DRIVERS_FAKE := tests/unit/drivers/fake_dev.c
TEST_SRCS_drivers_test_pci := $(DRIVERS_FAKE)
TEST_SRCS_drivers_test_virtio := $(DRIVERS_FAKE)
TEST_SRCS_drivers_test_virtio_net := $(DRIVERS_FAKE)
TEST_SRCS_drivers_test_virtio_blk := $(DRIVERS_FAKE)
TEST_SRCS_drivers_test_virtio_scsi := $(DRIVERS_FAKE)
TEST_SRCS_drivers_test_virtio_rng := $(DRIVERS_FAKE)
FUZZ_SRCS_virtio_used := $(DRIVERS_FAKE)
FUZZ_SRCS_pci_config := $(DRIVERS_FAKE)
FUZZ_SRCS_virtio_devcfg := $(DRIVERS_FAKE)
