/* SPDX-License-Identifier: MIT
 * Fuzz target: the configuration parser (tools/config/confparse.c) on arbitrary bytes,
 * then the header generator on whatever parsed. Checks the parser's promises: an error
 * has a kind, a NUL-terminated message and a line inside the input; a success has every
 * value inside its schema range, every string and list item NUL-terminated inside the
 * store, every list inside the item table. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/config/conf.h"
#include "tools/config/confgen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct conf_doc doc;

static void check_span(uint16_t off, uint16_t len)
{
	if ((size_t)off + len >= doc.store_used || doc.store[off + len] != '\0' ||
	    strlen(doc.store + off) != len)
		abort();
}

static void check_doc(void)
{
	if (doc.store_used > sizeof doc.store || doc.n_items > CONF_MAX_ITEMS)
		abort();
	for (size_t i = 0; i < conf_schema_len; i++) {
		const struct conf_key *k = &conf_schema[i];
		const struct conf_val *v = &doc.vals[i];
		switch (k->type) {
		case CONF_T_INT:
		case CONF_T_BOOL:
			if (v->i < k->min || v->i > k->max)
				abort();
			break;
		case CONF_T_ENUM:
			for (int64_t j = 0; j <= v->i; j++)
				if (!k->allowed[j])
					abort();
			break;
		case CONF_T_STR:
			check_span(v->off, v->len);
			if (v->len < k->min || v->len > k->max)
				abort();
			break;
		case CONF_T_IPV4:
			if (v->i < 0 || v->i > 0xffffffffll)
				abort();
			break;
		case CONF_T_LIST:
			if ((size_t)v->off + v->len > doc.n_items || v->len > k->max)
				abort();
			for (size_t j = 0; j < v->len; j++)
				check_span(doc.items[v->off + j].off, doc.items[v->off + j].len);
			break;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	struct conf_err err = { 0 };
	size_t lines = 1;
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	if (conf_parse(&doc, data, size, &err) != 0) {
		if (err.kind <= CONF_E_NONE || err.kind >= CONF_E__COUNT || err.line > lines ||
		    !memchr(err.msg, '\0', sizeof err.msg) || !err.msg[0])
			abort();
		return 0;
	}
	check_doc();
	if (!sink)
		sink = fopen("/dev/null", "w");
	if (sink && confgen_header(sink, &doc, "fuzz.conf") != 0)
		abort();
	return 0;
}
