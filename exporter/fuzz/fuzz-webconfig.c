/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the web config parser, on any bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/webconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct webconfig *wc = NULL;
	char *err = NULL;
	int r;

	r = webconfig_parse((const char *)data, size, "fuzz", &wc, &err);
	if (r == 0) {
		if (err || !wc)
			abort();
		/* what the server derives from a parsed config must hold together */
		if (wc->tls != ((wc->cert.file || wc->cert.data) && (wc->key.file || wc->key.data)))
			abort();
		if (!webconfig_tls_priorities(wc))
			abort();
		for (size_t i = 0; i < wc->n_users; i++)
			if (!wc->users[i].name[0] || strchr(wc->users[i].name, ':') ||
			    strlen(wc->users[i].hash) != 60)
				abort();
		for (size_t i = 0; i < wc->n_headers; i++)
			if (strpbrk(wc->headers[i].value, "\r\n"))
				abort();
	} else if (r == -22 && !err) {
		abort(); /* every refusal says why */
	}
	webconfig_free(wc);
	free(err);
	return 0;
}
