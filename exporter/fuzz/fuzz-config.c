/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the --config.file JSON parser, on any bytes. */
#include <stdint.h>
#include <stdlib.h>

#include "parse/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config *c = NULL;
	char *err = NULL;
	int r;

	r = config_parse((const char *)data, size, "fuzz", &c, &err);
	if (r == 0) {
		if (!c || err)
			abort();
		for (size_t i = 0; i < c->n_cgroups; i++)
			for (size_t j = 0; j < c->cgroups[i].n_paths; j++)
				config_path_is_glob(c->cgroups[i].paths[j]);
	} else if (r == -22 && !err) {
		abort(); /* every refusal says why */
	}
	config_free(c);
	free(err);
	return 0;
}
