/* SPDX-License-Identifier: MIT
 * Shim <math.h> for SQLite compiled freestanding: the one function its core uses (the
 * Kahan-Babuska-Neumaier sum of SUM()/TOTAL()), as the compiler's builtin (an and-not
 * of the sign bit, never a call). No libm in the image; SQLITE_ENABLE_MATH_FUNCTIONS stays
 * off. */
#ifndef URMQTT_STORE_SQLITE_SHIM_MATH_H
#define URMQTT_STORE_SQLITE_SHIM_MATH_H
#define fabs(x) __builtin_fabs(x)
#endif
