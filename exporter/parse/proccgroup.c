/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "parse/proccgroup.h"

#include <string.h>

char *proccgroup_path(char *buf, bool memory_v1)
{
	char *save = NULL;

	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *ctl = strchr(line, ':'), *path;

		if (!ctl || !(path = strchr(ctl + 1, ':')))
			continue;
		*path++ = '\0';
		ctl++;
		if (path[0] != '/')
			continue;
		if (!memory_v1 && strcmp(line, "0:") == 0 && ctl[0] == '\0')
			return path;
		if (memory_v1 && strcmp(line, "0:") != 0) {
			char *s2 = NULL;

			for (char *c = strtok_r(ctl, ",", &s2); c; c = strtok_r(NULL, ",", &s2))
				if (strcmp(c, "memory") == 0)
					return path;
		}
	}
	return NULL;
}
