/* SPDX-License-Identifier: MIT
 *
 * urMQTT's mbedTLS 3.6 configuration (passed as MBEDTLS_CONFIG_FILE). It owns the choice
 * of what of mbedTLS is compiled into the image: a TLS 1.3 server that requires client
 * certificates, nothing else. Every enabled option has one line saying why. It must never
 * enable TLS 1.2, a client, a filesystem, sockets, threads or the C library's time,
 * allocator or entropy: those come from tls/handshake.c's hooks (ops table at init).
 * RSA (2048-4096-bit keys, rsa_pss_rsae_sha256) is always compiled in; tls/handshake.c
 * refuses RSA keys at run time unless its config allows them.
 */
#ifndef URMQTT_TLS_MBEDTLS_CONFIG_H
#define URMQTT_TLS_MBEDTLS_CONFIG_H

/* ---- platform: no libc services, everything through our hooks ---- */
#define MBEDTLS_PLATFORM_C               /* mbedtls_platform_set_calloc_free/_time live here */
#define MBEDTLS_PLATFORM_MEMORY          /* calloc/free go to our accounting allocator */
#define MBEDTLS_PLATFORM_NO_STD_FUNCTIONS /* never reach for libc's calloc, time, printf, exit */
#define MBEDTLS_PLATFORM_SNPRINTF_MACRO snprintf /* x509 name formatting; the image maps it to lib/fmt */
#define MBEDTLS_HAVE_TIME                /* tickets need a clock (ticket age, key rotation) */
#define MBEDTLS_HAVE_TIME_DATE           /* certificate validity periods are checked */
#define MBEDTLS_PLATFORM_TIME_ALT        /* seconds clock set at init from the ops table */
#define MBEDTLS_PLATFORM_MS_TIME_ALT     /* millisecond clock: tls/handshake.c defines mbedtls_ms_time */
#define MBEDTLS_PLATFORM_GMTIME_R_ALT    /* calendar conversion is ours (no libc gmtime_r) */
#define MBEDTLS_NO_PLATFORM_ENTROPY      /* no /dev/urandom or getrandom in a unikernel */
#define MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG  /* PSA draws from our CSPRNG (ops table), no DRBG copy */
#define MBEDTLS_DEPRECATED_REMOVED       /* keep removed interfaces out of reach */
#define MBEDTLS_HAVE_ASM                 /* inline assembly for bignum multiply (general registers only) */

/* ---- PSA crypto, which mbedTLS 3.6 uses for every TLS 1.3 operation ---- */
#define MBEDTLS_PSA_CRYPTO_C             /* TLS 1.3 key schedule and ECDHE run through PSA */
#define MBEDTLS_USE_PSA_CRYPTO           /* required by TLS 1.3 in 3.6 */
#define MBEDTLS_PSA_ASSUME_EXCLUSIVE_BUFFERS /* no copies of PSA arguments: no PSA buffer is shared with another party (ADR-057) */
#if defined(URMQTT_KERNEL)
/* The images: the key store is shared by every core (ADR-026): ~6 volatile keys per handshake in flight
 * x 32 per core x 4 handshaking cores, with headroom. */
#define MBEDTLS_PSA_KEY_SLOT_COUNT 1024
#define MBEDTLS_THREADING_C              /* PSA's key store and globals are locked (ADR-026) */
#define MBEDTLS_THREADING_ALT            /* our spinlocks: tls/shim/threading_alt.h, threading_kernel.c */
#else
#define MBEDTLS_PSA_KEY_SLOT_COUNT 256   /* ~6 volatile keys per handshake in flight x up to 32 per core, with headroom: 16 made handshakes fail with ALLOC_FAILED beyond 3 in flight */
#endif

/* ---- symmetric primitives ---- */
#define MBEDTLS_AES_C                    /* TLS_AES_128_GCM_SHA256; our ticket sealing */
#define MBEDTLS_AES_ONLY_128_BIT_KEY_LENGTH /* we only use AES-128: smaller tables */
#define MBEDTLS_AES_ROM_TABLES           /* tables in read-only data, not built at run time */
#if defined(__x86_64__)
#define MBEDTLS_AESNI_C                  /* AES-NI + PCLMULQDQ when CPUID offers them (ADR-021) */
#elif defined(__aarch64__)
#define MBEDTLS_AESCE_C                  /* Armv8 AES + PMULL when ID_AA64ISAR0_EL1 offers both (ADR-071) */
#endif
#define MBEDTLS_GCM_C                    /* AES-GCM AEAD (suite, our record layer and tickets) */
#define MBEDTLS_CHACHA20_C               /* TLS_CHACHA20_POLY1305_SHA256 */
#define MBEDTLS_POLY1305_C               /* TLS_CHACHA20_POLY1305_SHA256 */
#define MBEDTLS_CHACHAPOLY_C             /* TLS_CHACHA20_POLY1305_SHA256 (and our record layer) */
#define MBEDTLS_MD_C                     /* HMAC for HKDF (our record layer and the key schedule) */
#define MBEDTLS_SHA256_C                 /* the suites' hash, certificate signatures */
#define MBEDTLS_SHA256_PROCESS_ALT       /* its block function is OpenSSL's perlasm, SHA-NI/Armv8 SHA-256 when the CPU has them (tls/accel/sha256.c) */
#define MBEDTLS_HKDF_C                   /* HKDF-Expand-Label; also turns on PSA HKDF */

/* ---- public key: ECDHE X25519/P-256, ECDSA P-256 ---- */
#define MBEDTLS_BIGNUM_C                 /* ECC and RSA arithmetic */
#define MBEDTLS_ECP_C                    /* ECC groups */
#define MBEDTLS_ECP_DP_SECP256R1_ENABLED /* P-256: ECDHE group and ECDSA certificates */
#define MBEDTLS_ECP_DP_CURVE25519_ENABLED /* X25519 ECDHE group */
#define MBEDTLS_ECP_NIST_OPTIM           /* fast reduction modulo the P-256 prime */
/* Our PSA transparent driver (tls/accel, ADR-056) takes P-256 and X25519 key generation, ECDH
 * and P-256 ECDSA through the hooks our pinned patch adds to the driver wrappers
 * (tools/deps/patches/); mbedTLS's ECP code above stays for everything else and as the
 * reference of the differential tests. */
#define URMQTT_PSA_ACCEL
#define MBEDTLS_ECDH_C                   /* (EC)DHE key exchange */
#define MBEDTLS_ECDSA_C                  /* ecdsa_secp256r1_sha256 signatures */
#define MBEDTLS_ECDSA_DETERMINISTIC      /* signatures do not depend on RNG quality */
#define MBEDTLS_HMAC_DRBG_C              /* needed by deterministic ECDSA */
#define MBEDTLS_ASN1_PARSE_C             /* certificates and signatures are DER */
#define MBEDTLS_ASN1_WRITE_C             /* ECDSA signatures are written as DER */
#define MBEDTLS_OID_C                    /* algorithm and extension identifiers */
#define MBEDTLS_PK_C                     /* keys in certificates */
#define MBEDTLS_PK_PARSE_C               /* the server key and certificate public keys */
#define MBEDTLS_BASE64_C                 /* PEM decoding (embedded PEM, host tools) */
#define MBEDTLS_PEM_PARSE_C              /* the CA/server certificate and key are PEM */
#define MBEDTLS_X509_USE_C               /* X.509 common parts */
#define MBEDTLS_X509_CRT_PARSE_C         /* client certificate chains */
#define MBEDTLS_X509_REMOVE_INFO         /* no human-readable dumps of certificates */

/* ---- RSA certificates: always compiled, used only when the env's config allows them ---- */
#define MBEDTLS_RSA_C                    /* RSA server and client certificates (config rsa, off by default) */
#define MBEDTLS_PKCS1_V15                /* sha256WithRSAEncryption certificate signatures; never in TLS 1.3 handshakes (sig_algs) */
#define MBEDTLS_PKCS1_V21                /* rsa_pss_rsae_sha256 CertificateVerify, sign and verify */
#define MBEDTLS_X509_RSASSA_PSS_SUPPORT  /* TLS 1.3 passes the PSS options to the CertificateVerify check only with it */
#define MBEDTLS_MPI_MAX_SIZE 512         /* 4096-bit RSA is the largest key accepted: smaller bignum buffers */

/* ---- TLS: 1.3 only, server only ---- */
#define MBEDTLS_SSL_TLS_C                /* the TLS engine */
#define MBEDTLS_SSL_SRV_C                /* we are only ever a server */
#ifdef URMQTT_DP_BENCH
#define MBEDTLS_SSL_CLI_C                /* benchmark tree only: tools/dpbench's in-guest client */
#endif
#define MBEDTLS_SSL_PROTO_TLS1_3         /* TLS 1.3 and nothing older */
#define MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_EPHEMERAL_ENABLED /* full handshake with ECDHE */
#define MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL_ENABLED /* ticket resumption with ECDHE */
#define MBEDTLS_SSL_TLS1_3_COMPATIBILITY_MODE /* OpenSSL and Python clients send middlebox CCS */
#define MBEDTLS_SSL_KEEP_PEER_CERTIFICATE /* required by TLS 1.3; identity is read from it */
#define MBEDTLS_SSL_SESSION_TICKETS      /* stateless resumption (tickets sealed by tls/handshake.c) */
#define MBEDTLS_SSL_IN_CONTENT_LEN 16384 /* the largest ClientHello or client chain message RFC 8446 allows in one record, and what tls.max_client_hello_bytes / max_client_chain_bytes may allow */
#define MBEDTLS_SSL_OUT_CONTENT_LEN 4096 /* server flight (one certificate), not 16 KiB */
#define MBEDTLS_SSL_CIPHERSUITES MBEDTLS_TLS1_3_AES_128_GCM_SHA256, MBEDTLS_TLS1_3_CHACHA20_POLY1305_SHA256 /* the two suites */

#endif
