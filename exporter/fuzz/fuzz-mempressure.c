/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the memory.events and memory.pressure parsers, on any bytes. */
#include <stdint.h>
#include <stdlib.h>

#include "parse/mempressure.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mempressure_events ev;
	struct mempressure_psi psi;

	if (mempressure_parse_events((const char *)data, size, &ev) == 0 &&
	    (ev.present >> _MEMPRESSURE_EVENT_MAX) != 0)
		abort();
	if (mempressure_parse_psi((const char *)data, size, &psi) == 0 &&
	    (psi.present >> _MEMPRESSURE_PSI_MAX) != 0)
		abort();
	return 0;
}
