/* SPDX-License-Identifier: MIT
 *
 * The image's relocation table as an object: KRELOC_BLOB names the file (urmqtt.relocs,
 * or an empty table for the link that produces it). kernel.ld places it at the end of the
 * file bytes, after every site it names (ADR-084). Never code.
 */
	.section .urmqtt_relocs, "a"
	.p2align 3
	.incbin KRELOC_BLOB

	.section .note.GNU-stack, "", %progbits
