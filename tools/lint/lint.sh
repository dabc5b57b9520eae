#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make lint: cppcheck and clang-tidy over our portable code (checked-in .clang-tidy).
# Prints "lint: clean" and exits 0, or the findings and exits 1.
set -uo pipefail
build=${1:-build}
mapfile -t srcs < <(git ls-files 'lib/*.c' 'kernel/*.c' 'tests/support/tcp_echo.c' 'plat/*.c' 'net/*.c' 'tls/*.c' 'mqtt/*.c' 'store/*.c' 'drivers/*.c' 'dp/*.c' |
	grep -v -E '_(x86_64|aarch64)\.c$|/mem_kernel\.c$')
[ ${#srcs[@]} -gt 0 ] || { echo "lint: nothing to check"; exit 0; }
cc_inc=$(gcc -print-file-name=include)
rc=0
echo "  LINT        cppcheck (${#srcs[@]} files)"
if ! cppcheck --quiet --error-exitcode=1 --std=c11 --enable=warning,portability,performance \
	--inline-suppr --suppress=missingIncludeSystem -I. -I"$build/gen" "${srcs[@]}" 2>"$build/lint-cppcheck.log"; then
	cat "$build/lint-cppcheck.log"; rc=1
fi
echo "  LINT        clang-tidy (${#srcs[@]} files)"
tidy=$(command -v clang-tidy-14 || command -v clang-tidy)
# tls/ sees mbedTLS's headers (fetched by make deps) through the same flags as the build.
mbed=(-isystem tls/shim -isystem "$build/deps/mbedtls-3.6.6/include" -DMBEDTLS_CONFIG_FILE='"tls/mbedtls_config.h"')
# The image's mbedTLS glue (tls/shim/*_kernel.c) sees the image's configuration.
portable=() image=()
for f in "${srcs[@]}"; do
	case $f in tls/shim/*_kernel.c) image+=("$f") ;; *) portable+=("$f") ;; esac
done
tidy_flags=(-std=c11 -ffreestanding -nostdinc -isystem "$(clang -print-resource-dir)/include" -I. -I"$build/gen" "${mbed[@]}")
if ! { "$tidy" --quiet "${portable[@]}" -- "${tidy_flags[@]}" &&
	{ [ ${#image[@]} -eq 0 ] || "$tidy" --quiet "${image[@]}" -- "${tidy_flags[@]}" -DURMQTT_KERNEL=1; }; } \
	>"$build/lint-tidy.log" 2>&1; then
	grep -E 'warning:|error:' "$build/lint-tidy.log" | head -50; rc=1
fi
# The hosted platform is our code too, but Linux-process C: checked with libc's headers.
mapfile -t hosted < <(git ls-files 'hosted/*.c')
if [ ${#hosted[@]} -gt 0 ]; then
	echo "  LINT        hosted/ (${#hosted[@]} files, with libc)"
	if ! cppcheck --quiet --error-exitcode=1 --std=c11 --enable=warning,portability,performance \
		--inline-suppr --suppress=missingIncludeSystem -I. -I"$build/gen" "${hosted[@]}" 2>>"$build/lint-cppcheck.log"; then
		cat "$build/lint-cppcheck.log"; rc=1
	fi
	if ! "$tidy" --quiet "${hosted[@]}" -- -std=gnu11 -I. -I"$build/gen" >>"$build/lint-tidy.log" 2>&1; then
		grep -E 'warning:|error:' "$build/lint-tidy.log" | head -50; rc=1
	fi
fi
[ $rc -eq 0 ] && echo "lint: clean"
exit $rc
