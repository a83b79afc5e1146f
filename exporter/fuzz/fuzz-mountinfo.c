/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the mountinfo parser (a whole buffer, each line, the option lists) and the
 * overlay layer list read from super options, on any bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse/mountinfo.h"
#include "files/overlay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void options(const char *list)
{
	const char *cursor = list;
	char *key;
	const char *value;

	while (mountinfo_next_option(&cursor, &key, &value) > 0) {
		if (value && (value < key || strchr(key, '\0') >= value))
			abort(); /* the value lives after the key, in the same allocation */
		free(key);
	}
}

static void layers(const char *super_options)
{
	struct overlay_layers l;

	if (overlay_parse_layers(super_options, &l) < 0)
		return;
	if (l.n_lower == 0)
		abort();
	for (size_t i = 0; i < l.n_lower; i++)
		if (!l.lower[i][0])
			abort(); /* no empty layer */
	overlay_layers_done(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct mountinfo m;
	int id = size ? data[0] % 64 : 0;

	if (mountinfo_find(buf, size, id, &m) == 0) {
		if (m.mount_id != id || !m.root || !m.mount_point || !m.fstype || !m.source ||
		    !m.mount_options || !m.super_options)
			abort();
		options(m.mount_options);
		options(m.super_options);
		layers(m.super_options);
		mountinfo_done(&m);
	}
	if (mountinfo_parse_line(buf, size, &m) == 0)
		mountinfo_done(&m);
	for (const char *pos = buf; mountinfo_next(&pos, buf + size, &m) > 0;)
		mountinfo_done(&m);
	return 0;
}
