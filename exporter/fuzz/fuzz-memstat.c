/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the memory.stat (v2 and v1) and memory.numa_stat parsers, on any bytes. */
#include <stdint.h>
#include <stdlib.h>

#include "parse/memstat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct memstat m;
	struct memstat_numa numa = { 0 };

	if (memstat_parse((const char *)data, size, &m) == 0 && (m.present >> _MEMSTAT_MAX) != 0)
		abort();
	if (memstat_parse_v1((const char *)data, size, &m) == 0 &&
	    (m.present & ~(1u << MEMSTAT_FILE | 1u << MEMSTAT_WORKINGSET_REFAULT_FILE)) != 0)
		abort(); /* v1 has no other counters */
	if (memstat_parse_numa((const char *)data, size, &numa) == 0) {
		for (size_t i = 1; i < numa.n_nodes; i++)
			if (numa.nodes[i - 1].node >= numa.nodes[i].node)
				abort(); /* sorted, one entry per node */
		memstat_numa_done(&numa);
	}
	return 0;
}
