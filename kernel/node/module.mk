# SPDX-License-Identifier: MIT
# kernel/node/: the one place that builds a running node out of the layers, over a small
# platform port (kernel/node/port.h; the image's in arch/<arch>/node_port.c, the hosted
# broker's in hosted/node_port.c). broker.c: one core's data plane (dp/ on TCP, TLS 1.3
# with client certificates, an MQTT shard) with its accounted heap and memory line;
# revoked.c: the image's revoked serials; node.c: the multicore node (stacks, mesh,
# steering, storage links), the image's only. Linked into the image and the hosted broker
# (they need the embedded certificates and a port), so not into the portable library.
NODE_SRCS := kernel/node/broker.c kernel/node/revoked.c
KERNEL_SRCS_x86_64 += $(NODE_SRCS) kernel/node/node.c
HOSTED_SRCS += $(NODE_SRCS)
