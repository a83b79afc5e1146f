/* SPDX-License-Identifier: Apache-2.0 */
/*
 * expfmt: what every writer of the text exposition format 0.0.4 shares, in either process: its
 * content type and a family's HELP and TYPE lines. The samples of a snapshot are scan/render.h's.
 */
#pragma once

#include <stdio.h>

#define RENDER_TEXT_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The HELP and TYPE lines of a family. */
void render_family(FILE *out, const char *name, const char *type, const char *help);
