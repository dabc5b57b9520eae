/* SPDX-License-Identifier: MIT
 * Fuzz target for tls/hello: any bytes as a client's first record. Checks: nothing crashes
 * or reads outside the input, every share found lies inside it, at most
 * TLS_HELLO_MAX_SHARES are returned. */
#include <stdint.h>
#include <stdlib.h>

#include "lib/err.h"
#include "tls/hello.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tls_hello_share sh[TLS_HELLO_MAX_SHARES];
	size_t n = 0;
	int rc = tls_hello_key_shares(data, size, sh, &n);
	if (rc != 0 && rc != -E_AGAIN && rc != -E_PROTO)
		abort();
	if (n > TLS_HELLO_MAX_SHARES || (rc != 0 && n > TLS_HELLO_MAX_SHARES))
		abort();
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (sh[i].key < data || sh[i].key + sh[i].len > data + size || sh[i].len == 0)
			abort();
	return 0;
}
