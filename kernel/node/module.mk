# SPDX-License-Identifier: MIT
# kernel/node/: the one place that builds a running node out of the layers, over a small
# platform port (kernel/node/port.h; the image's in arch/<arch>/node_port.c, the hosted
# broker's in hosted/node_port.c). broker.c: one core's data plane (dp/ on TCP, TLS 1.3
# with client certificates, an MQTT shard) with its accounted heap and memory line;
# revoked.c: the image's revoked serials; allowlist.c: the registry of allowlist mode; tls_port.c: the TLS hooks on the port; node.c: the
# multicore node (stacks, mesh, steering, storage links), devices.c (virtio over PCI),
# disks.c (disk resizes) and tls_selftest.c (the boot self-test of the TLS stack), the
# image's only. Linked into the image and the hosted broker (they need the embedded
# certificates and a port), so not into the portable library. Host tools and micro-benchmarks take the hosted port's hooks from
# NODE_HOST_PORT_SRCS instead of writing their own.
NODE_SRCS := kernel/node/broker.c kernel/node/revoked.c kernel/node/allowlist.c kernel/node/tls_port.c
NODE_HOST_PORT_SRCS := hosted/node_port.c kernel/node/tls_port.c
NODE_IMAGE_SRCS := $(NODE_SRCS) kernel/node/node.c kernel/node/opsd.c kernel/node/disks.c kernel/node/tls_selftest.c \
	kernel/node/devices.c kernel/node/port_kernel.c kernel/node/install.c
KERNEL_SRCS_x86_64 += $(NODE_IMAGE_SRCS)
KERNEL_SRCS_aarch64 += $(NODE_IMAGE_SRCS)
# The TLS self-test includes mbedTLS headers and the embedded development certificates
# (deferred: tls/ and tools/certs/ module.mk are read after this one).
CFLAGS_kernel_node_tls_selftest = $(TLS_INC) -isystem $(TLS_MBEDTLS_DIR)/library
GENERATED_HEADERS += $(B)/gen/urmqtt_certs.h
HOSTED_SRCS += $(NODE_SRCS)
