# SPDX-License-Identifier: MIT
# dp/: the per-core data plane joining TCP, TLS (handshake + record layer) and the MQTT
# broker. Portable; dp/conf.c reads the configuration constants.
PORTABLE_SRCS += dp/dp.c dp/conf.c

# Unit test: the data plane with a fake TCP below (no client handshake needed for the
# admission, refusal and leak paths).
TEST_LIBS_dp_test_dp := $(B)/host/libmbedtls.a
CFLAGS_tests_unit_dp_test_dp := $(TLS_TEST_INC)
$(B)/host/tests/unit/dp/test_dp: $(B)/host/libmbedtls.a
