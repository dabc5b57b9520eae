/* SPDX-License-Identifier: MIT
 *
 * The few compiler support routines the freestanding image needs and does not get from
 * libgcc (the image links no library): GCC lowers __builtin_popcount* to __popcountdi2
 * when the target has no POPCNT instruction (we build for baseline x86-64). Names are
 * fixed by the compiler ABI, hence not module-prefixed. Nibble table: not an idiom the
 * compiler would turn back into a call to itself.
 */
#include "lib/compiler.h"

int __popcountdi2(long a);

int __popcountdi2(long a)
{
	static const uint8_t nib[16] = { 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4 };
	unsigned long x = (unsigned long)a;
	int n = 0;
	for (unsigned i = 0; i < 16; i++, x >>= 4)
		n += nib[x & 15u];
	return n;
}
