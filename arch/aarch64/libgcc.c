/* SPDX-License-Identifier: MIT
 *
 * Compiler runtime helpers the aarch64 image provides itself: libgcc's own builds use
 * FP/SIMD instructions (its population count is `cnt` on a vector register), which trap in
 * the kernel (-mgeneral-regs-only; FP/SIMD is off outside the crypto code). The names
 * are fixed by the compiler's ABI, hence not module-prefixed. Linked before libgcc, so
 * these are the ones used.
 */
int __popcountdi2(long long x);

int __popcountdi2(long long x)
{
	unsigned long long v = (unsigned long long)x;
	v = v - ((v >> 1) & 0x5555555555555555ull);
	v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
	v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (int)((v * 0x0101010101010101ull) >> 56);
}
