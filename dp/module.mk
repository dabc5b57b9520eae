# SPDX-License-Identifier: MIT
# dp/: the per-core data plane joining TCP, TLS (handshake + record layer) and the MQTT
# broker. Portable; dp/conf.c reads the configuration constants.
PORTABLE_SRCS += dp/dp.c dp/conf.c dp/shard.c dp/store.c

# Unit test: the data plane with a fake TCP below (no client handshake needed for the
# admission, refusal and leak paths).
TEST_LIBS_dp_test_dp := $(B)/host/libmbedtls.a
CFLAGS_tests_unit_dp_test_dp := $(TLS_TEST_INC)
$(B)/host/tests/unit/dp/test_dp: $(B)/host/libmbedtls.a

# Unit test: three data planes as three cores, joined by an in-process mesh (home cores,
# forwarding, takeover, wills, routing between shards, retained replication, backpressure).
TEST_LIBS_dp_test_shard := $(B)/host/libmbedtls.a
CFLAGS_tests_unit_dp_test_shard := $(TLS_TEST_INC)
$(B)/host/tests/unit/dp/test_shard: $(B)/host/libmbedtls.a
