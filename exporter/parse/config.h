/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config: the --config.file JSON (see docs/design.md). Parses from a buffer; errors come back as a
 * message naming the file and the line and column (syntax) or the key (meaning). Never logs.
 */
#pragma once

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

struct config_cgroup {
	char *match;  /* fnmatch(3) pattern against the cgroup label, FNM_PATHNAME */
	char **paths; /* files, directories, globs */
	size_t n_paths;
};

struct config {
	struct config_cgroup *cgroups;
	size_t n_cgroups;
	unsigned per_file_top; /* CONFIG_PER_FILE_TOP_UNSET: --collector.perfile.cgroup-top decides */
	uint64_t max_files_per_scan;
	uint64_t max_files_per_cgroup;
	/* what one process may make a scan read: descriptors, and lines of its maps */
	uint64_t max_descriptors_per_process;
	uint64_t max_mappings_per_process;
	double max_scan_seconds;
};

#define CONFIG_PER_FILE_TOP_UNSET UINT_MAX
#define CONFIG_DEFAULT_PER_FILE_TOP CONFIG_PER_FILE_TOP_UNSET
#define CONFIG_MAX_PER_FILE_TOP 10000
#define CONFIG_DEFAULT_MAX_FILES_PER_SCAN 1000000
#define CONFIG_DEFAULT_MAX_FILES_PER_CGROUP 200000
#define CONFIG_DEFAULT_MAX_DESCRIPTORS_PER_PROCESS 100000
#define CONFIG_DEFAULT_MAX_MAPPINGS_PER_PROCESS 100000
#define CONFIG_DEFAULT_MAX_SCAN_SECONDS 10.0
/* Components of a glob in paths at most: its expansion holds a directory open for each. */
#define CONFIG_MAX_GLOB_COMPONENTS 64

/* A config with every default and no paths. NULL on ENOMEM. */
struct config *config_new_default(void);

/*
 * Parses buf (len bytes) as a config; source names it in messages. Returns 0 and *ret, or
 * -EINVAL with *ret_error ("SOURCE:LINE:COLUMN: what" or "SOURCE: KEY: what"; caller frees),
 * or -ENOMEM.
 */
int config_parse(const char *buf, size_t len, const char *source, struct config **ret,
		 char **ret_error);

/* Reads and parses a file. -errno of the read comes with a message as well. */
int config_load(const char *path, struct config **ret, char **ret_error);

void config_free(struct config *c);

static inline void config_freep(struct config **c)
{
	config_free(*c);
}

/* True when pattern names characters that glob(3) expands. */
int config_path_is_glob(const char *path);
