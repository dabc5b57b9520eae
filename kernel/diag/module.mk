# SPDX-License-Identifier: MIT
# kernel/diag/: the diagnostics boot mode (urmqtt.mode=diag; kernel/diag/diag.h). Portable and
# host-tested: the console line reader (kernel/console_in.c, the operator's WIPE answer),
# the bounded JSON writer (json.c), the GPT free-run finder (gpt_free.c, over store/gpt's
# decoders) and the run's bounds from the configuration's [diag] section (limits.c). Image
# only: diag.c (devices, disks, memory, the WIPE gate, the report) and crypto.c (figures
# through PSA, the curve driver and mbedTLS; needs the TLS self-test's headers), like
# kernel/node's image sources.
PORTABLE_SRCS += kernel/console_in.c kernel/diag/json.c kernel/diag/gpt_free.c kernel/diag/limits.c
DIAG_IMAGE_SRCS := kernel/diag/diag.c kernel/diag/crypto.c
KERNEL_SRCS_x86_64 += $(DIAG_IMAGE_SRCS)
KERNEL_SRCS_aarch64 += $(DIAG_IMAGE_SRCS)
CFLAGS_kernel_diag_crypto = $(TLS_INC) -isystem $(TLS_MBEDTLS_DIR)/library
