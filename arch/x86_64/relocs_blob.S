/* SPDX-License-Identifier: MIT
 *
 * The image's relocation table as an object: KRELOC_BLOB names the file (urmqtt.relocs,
 * or an empty table for the link that produces it). Placed by kernel.ld at the end of the
 * image, in a read-only segment of its own (ADR-077). Never code.
 */
	.section .urmqtt_relocs, "a"
	.p2align 3
	.incbin KRELOC_BLOB

	.section .note.GNU-stack, "", @progbits
