# SPDX-License-Identifier: MIT
# kernel/node/: the one place that builds a running node out of the layers, over a small
# platform port (kernel/node/port.h; the image's in arch/<arch>/node_port.c, the hosted
# broker's in hosted/node_port.c). broker.c: one core's data plane (dp/ on TCP, TLS 1.3
# with client certificates, an MQTT shard) with its accounted heap and memory line;
# revoked.c: the image's revoked serials; tls_port.c: the TLS hooks on the port; node.c: the
# multicore node (stacks, mesh, steering, storage links) and disks.c (disk resizes), the
# image's only. Linked into the image and the hosted broker (they need the embedded
# certificates and a port), so not into the portable library. Host tools and micro-benchmarks take the hosted port's hooks from
# NODE_HOST_PORT_SRCS instead of writing their own.
NODE_SRCS := kernel/node/broker.c kernel/node/revoked.c kernel/node/tls_port.c
NODE_HOST_PORT_SRCS := hosted/node_port.c kernel/node/tls_port.c
KERNEL_SRCS_x86_64 += $(NODE_SRCS) kernel/node/node.c kernel/node/disks.c
HOSTED_SRCS += $(NODE_SRCS)
