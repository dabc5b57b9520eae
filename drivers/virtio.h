/* SPDX-License-Identifier: MIT
 *
 * Virtio 1.x over PCI (the "modern" transport, virtio 1.2 section 4.1): finds the common,
 * notify, ISR and device-specific configuration structures through vendor capabilities,
 * resets and initialises the device, negotiates features, creates split virtqueues and
 * reads device configuration consistently. Legacy-only devices (no modern capabilities,
 * or no VIRTIO_F_VERSION_1) are refused with a message. Capability contents are device
 * input: every structure must lie inside a validated memory BAR or it is ignored and
 * counted. Never allocates except ring memory through port->dma_alloc at queue creation.
 *
 * Wiring by the kernel (boot core): pci_bus_scan -> for each function with a virtio type:
 * virtio_pci_probe -> pci_msix_init (MSI-X on, function masked) -> the device driver's
 * init (vnet_init / vblk_init / vscsi_init / vrng_init, which negotiate, create queues
 * with their vector numbers and set DRIVER_OK) -> pci_msix_set for each vector with the
 * address/data the interrupt controller gives for the owning core -> pci_msix_enable.
 * Interrupts: with MSI-X a vector's handler only marks its queue's work (no acknowledge);
 * without MSI-X, virtio_isr_ack reads and clears the ISR. Polling and interrupts are
 * switched per queue with vq_cb_disable / vq_cb_enable.
 *
 * Device states (status register): RESET (virtio_pci_probe) -> ACKNOWLEDGE|DRIVER
 * (virtio_pci_probe) -> FEATURES_OK (virtio_negotiate) -> queues (virtio_queue_create)
 * -> DRIVER_OK (virtio_driver_ok). Any failure -> FAILED (virtio_fail), final.
 */
#ifndef DRIVERS_VIRTIO_H
#define DRIVERS_VIRTIO_H

#include "drivers/pci.h"
#include "drivers/virtqueue.h"

#define VIRTIO_PCI_VENDOR 0x1af4u

/* Device types (virtio 1.2 section 5). */
#define VIRTIO_ID_NET 1u
#define VIRTIO_ID_BLOCK 2u
#define VIRTIO_ID_RNG 4u
#define VIRTIO_ID_SCSI 8u

/* Transport feature bits. */
#define VIRTIO_F_INDIRECT_DESC (1ull << 28)
#define VIRTIO_F_EVENT_IDX (1ull << 29)
#define VIRTIO_F_VERSION_1 (1ull << 32)
#define VIRTIO_F_ACCESS_PLATFORM (1ull << 33)
#define VIRTIO_F_RING_PACKED (1ull << 34)

#define VIRTIO_MSI_NO_VECTOR 0xffffu

enum virtio_reject {
	VIRTIO_REJ_CAP,       /* vendor capability malformed or outside its BAR */
	VIRTIO_REJ_LEGACY,    /* legacy-only device */
	VIRTIO_REJ_FEATURES,  /* required features missing or FEATURES_OK refused */
	VIRTIO_REJ_QUEUE,     /* bad queue size or notify offset */
	VIRTIO_REJ_CFG,       /* device config read out of range or never stable */
	VIRTIO_REJ__COUNT
};

struct virtio_dev {
	const struct drv_port *port; /* linked */
	struct pci_bus *bus;         /* linked */
	struct pci_dev *pci;         /* linked */
	uintptr_t common, notify, isr, devcfg;
	uint64_t notify_len;
	uint32_t notify_mult, devcfg_len;
	uint64_t offered, features;
	uint16_t device_type, num_queues;
	uint8_t cfg_gen; /* config_generation of the last stable virtio_cfg_read* */
	bool failed;
	uint32_t rejected[VIRTIO_REJ__COUNT];
};

/* Virtio device type of a PCI function, or 0 if it is not a virtio device. */
uint16_t virtio_pci_device_type(const struct pci_dev *d);

/* Bind vd to a virtio PCI function: validate capabilities, map BARs, enable the
 * function, reset the device and set ACKNOWLEDGE|DRIVER. -E_NOSYS for a legacy-only
 * device, -E_INVAL for malformed capabilities, -E_TIMEOUT if reset never completes. */
int virtio_pci_probe(struct virtio_dev *vd, struct pci_bus *bus, struct pci_dev *d) MUST_CHECK;

/* The device's offered features (also kept in vd->offered); 0 once failed. For drivers
 * whose wanted set depends on what is offered (feature dependencies). */
uint64_t virtio_offered(struct virtio_dev *vd);

/* Accept offered & (wanted | VERSION_1 | ACCESS_PLATFORM), never RING_PACKED; fail with a
 * message if any of `required` (VERSION_1 is always required) is missing, or if the
 * device refuses FEATURES_OK. vd->features holds the result; vd->num_queues is read
 * again (the count may depend on the negotiated features). */
int virtio_negotiate(struct virtio_dev *vd, uint64_t wanted, uint64_t required) MUST_CHECK;

/* Create queue `index`: its size is the device maximum capped to max_size (both powers of
 * two), ring memory from port->dma_alloc, slots (linked) at least that many entries,
 * interrupt vector msix (VIRTIO_MSI_NO_VECTOR for none). Enables the queue.
 * -E_NOENT if the device has no such queue. */
int virtio_queue_create(struct virtio_dev *vd, struct vq *q, uint16_t index, uint16_t max_size,
			struct vq_slot *slots, uint16_t msix) MUST_CHECK;

/* Set DRIVER_OK: the device is live. */
int virtio_driver_ok(struct virtio_dev *vd) MUST_CHECK;
/* Set FAILED with a logged reason; the device is unusable afterwards. */
void virtio_fail(struct virtio_dev *vd, const char *why);
/* Interrupt acknowledge: reading the ISR clears it. Bit 0: a queue, bit 1: config
 * changed. For INTx only; MSI-X vectors need no acknowledge here. */
uint8_t virtio_isr_ack(struct virtio_dev *vd);
/* Set the configuration-change vector. -E_NOMEM if the device did not take it. */
int virtio_config_vector(struct virtio_dev *vd, uint16_t msix) MUST_CHECK;
/* One read of config_generation (the device moves it whenever its configuration changes;
 * 8 bits, so 256 changes between two looks alias: callers that must not miss a change
 * also take the interrupt or the ISR bit). Loop context, never an interrupt handler. */
uint8_t virtio_cfg_generation(struct virtio_dev *vd);

/* Copy len bytes of device config at off into out (little-endian as on the device),
 * retrying until config_generation is stable (bounded); vd->cfg_gen is then the
 * generation the copy belongs to. Scalar fields: aligned accesses
 * of the field's natural width. -E_RANGE outside the structure, -E_AGAIN if it never
 * settles. */
int virtio_cfg_read(struct virtio_dev *vd, uint32_t off, void *out /* out */, uint32_t len) MUST_CHECK;
/* The same for byte arrays (e.g. a MAC address): one 8-bit access per byte. */
int virtio_cfg_read_bytes(struct virtio_dev *vd, uint32_t off, void *out /* out */, uint32_t len) MUST_CHECK;
int virtio_cfg_write8(struct virtio_dev *vd, uint32_t off, uint8_t v) MUST_CHECK;

#endif
