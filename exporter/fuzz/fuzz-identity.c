/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the cgroup path parser. Whatever the path, every label it gives must be
 * well formed (a 64-digit id with a runtime, a UID of 36 or 32 characters, a unit name that is a
 * component of the path), and the rendered labels must fit IDENTITY_LABELS_MAX with no raw
 * newline or unescaped quote.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse/identity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool all_hex(const char *s)
{
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || *s == '-'))
			return false;
	return true;
}

/* name is "/name/", "/name" at the end, or the path itself, or the path without its '/'. */
static bool is_component(const char *path, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = strstr(path, name); p; p = strstr(p + 1, name))
		if ((p == path || p[-1] == '/') && (p[n] == '\0' || p[n] == '/'))
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct identity id;
	char buf[IDENTITY_LABELS_MAX];
	char *path = strndup((const char *)data, size); /* a cgroup label is a C string */
	size_t uid;
	int n;

	if (!path)
		return 0;
	identity_parse(path, IDENTITY_NO_DELEGATION, &id);
	if ((id.runtime == IDENTITY_RUNTIME_NONE) != (id.container_id[0] == '\0'))
		abort(); /* a runtime comes with its id */
	if (id.container_id[0] && (strlen(id.container_id) != 64 || !all_hex(id.container_id) ||
				   strchr(id.container_id, '-') || !strstr(path, id.container_id)))
		abort();
	uid = strlen(id.pod_uid);
	if (uid && ((uid != 36 && uid != 32) || !all_hex(id.pod_uid)))
		abort();
	if ((id.systemd_unit[0] && !is_component(path, id.systemd_unit)) ||
	    (id.systemd_slice[0] && !is_component(path, id.systemd_slice)))
		abort();
	n = identity_labels(&id, buf, sizeof(buf));
	if (n < 0 || (size_t)n != strlen(buf) || strchr(buf, '\n'))
		abort();
	for (int i = 0; i < n; i++) {
		if (buf[i] == '\\')
			i++; /* an escape: the next character is taken as it is */
		else if (buf[i] == '"' && !(i > 0 && buf[i - 1] == '=') &&
			 !(buf[i + 1] == ',' || buf[i + 1] == '\0'))
			abort(); /* a quote that neither opens nor closes a value */
	}
	free(path);
	return 0;
}
