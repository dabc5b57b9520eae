# SPDX-License-Identifier: MIT
# tools/disk: urmqtt-disk, the offline reader of an urMQTT data disk (layout summary, the
# telemetry log as JSON lines or CSV). Read only; the disk through hosted/blk_file.
TOOLS += urmqtt-disk
TOOL_SRCS_urmqtt-disk := tools/disk/main.c hosted/blk_file.c
