# SPDX-License-Identifier: Apache-2.0
# The layers of exporter/: which folder may use which. One table, read by exporter/Makefile (each
# folder is a static library, and each unit test of tests/unit/FOLDER is linked with its folder's
# library and those of the folders named here, nothing else, so that a call out of bounds fails
# to link), by tests/unit/test-source.c (no #include out of bounds) and by
# scripts/check-docs-tables.py (the map of docs/design.md). A graph, not an order: http and
# scanner, the two processes, may not use each other. Each row names every folder its folder may
# use, directly or through another (the table is closed: test-source checks it). main is main.c;
# fuzz the fuzz targets.
USES_base :=
USES_parse := base
USES_files := base parse
USES_fanotify := base parse files
USES_scan := base parse files
USES_activity := base
USES_collectors := base parse files fanotify activity scan
USES_wire := base
# the scanner process runs the collectors (found through the registry's linker section)
USES_scanner := base parse files fanotify activity scan collectors wire
USES_http := base wire
USES_privsep := base parse files fanotify activity scan collectors wire scanner http
USES_main := base parse files fanotify activity scan collectors wire scanner http privsep
USES_fuzz := base parse files scan wire http
