/* SPDX-License-Identifier: Apache-2.0 */
/* expfmt: the pieces of the text exposition format that both processes write. */
#include "base/expfmt.h"

void render_family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}
