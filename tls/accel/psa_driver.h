/* SPDX-License-Identifier: MIT */
/* tls/accel: the PSA transparent-driver entry points mbedTLS 3.6's driver wrappers call, through
 * the hooks of tools/deps/patches/mbedtls-3.6.6-accel-hooks.patch (guarded there by
 * URMQTT_PSA_ACCEL). Signatures are those of PSA's transparent driver interface (see mbedTLS's
 * docs/proposed/psa-driver-interface.md): every pointer is borrowed for the call, outputs are
 * written only on success. Each returns PSA_ERROR_NOT_SUPPORTED for what it does not take (any
 * key other than P-256 or X25519, any algorithm other than ECDSA/ECDH, the driver turned off),
 * and mbedTLS then runs its built-in code. Included only by mbedTLS's patched wrappers and by
 * psa_driver.c. */
#ifndef URMQTT_TLS_ACCEL_PSA_DRIVER_H
#define URMQTT_TLS_ACCEL_PSA_DRIVER_H

#include <psa/crypto.h>

psa_status_t urmqtt_accel_generate_key(const psa_key_attributes_t *attributes,
	uint8_t *key_buffer, size_t key_buffer_size, size_t *key_buffer_length);

psa_status_t urmqtt_accel_export_public_key(const psa_key_attributes_t *attributes,
	const uint8_t *key_buffer, size_t key_buffer_size,
	uint8_t *data, size_t data_size, size_t *data_length);

psa_status_t urmqtt_accel_key_agreement(const psa_key_attributes_t *attributes,
	const uint8_t *key_buffer, size_t key_buffer_size, psa_algorithm_t alg,
	const uint8_t *peer_key, size_t peer_key_length,
	uint8_t *shared_secret, size_t shared_secret_size, size_t *shared_secret_length);

psa_status_t urmqtt_accel_sign_hash(const psa_key_attributes_t *attributes,
	const uint8_t *key_buffer, size_t key_buffer_size, psa_algorithm_t alg,
	const uint8_t *hash, size_t hash_length,
	uint8_t *signature, size_t signature_size, size_t *signature_length);

psa_status_t urmqtt_accel_verify_hash(const psa_key_attributes_t *attributes,
	const uint8_t *key_buffer, size_t key_buffer_size, psa_algorithm_t alg,
	const uint8_t *hash, size_t hash_length,
	const uint8_t *signature, size_t signature_length);

#endif
