#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make deb: builds the Debian source and binary packages of the working tree (the files git
# tracks or would track, as they are now) with debhelper (debian/), in a copy under
# $BUILD_ROOT/deb, versioned from git tags (scripts/lib-version.sh), then runs lintian on
# them. A build off a release tag carries debian/changelog as it is; any other gets a snapshot
# version. Prints the .deb's path last. Exit status 1 when the build fails or lintian reports
# an error or a warning.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib-version.sh
. "$top/scripts/lib-version.sh"
out=${BUILD_ROOT:-/var/tmp/cachestat_exporter}/deb

version_of "$top"
release=$(debian_changelog_version "$top")
case $VERSION in
*[+~]*) ;;
"$release") ;;
*)
	echo "build-deb: tag v$VERSION but debian/changelog's newest entry is $release" >&2
	exit 1
	;;
esac

rm -rf "$out"
src=$out/cachestat-exporter-$VERSION
mkdir -p "$src"
git -C "$top" ls-files -z --cached --others --exclude-standard --deduplicate |
	(cd "$top" && xargs -0 sh -c 'for f; do [ -e "$f" ] || [ -L "$f" ] && printf "%s\0" "$f"; done' sh) |
	tar -C "$top" --null -T - -cf - | tar -x -C "$src"
if [ "$VERSION" != "$release" ]; then
	# A snapshot: a new entry after a release, the newest entry renamed before the first one
	# (so that the version still grows).
	cl=$src/debian/changelog
	if [[ $VERSION == *+git* ]]; then
		maint=$(sed -n 's/^ -- \(.*>\)  .*/\1/p' "$cl" | head -n 1)
		{
			printf 'cachestat-exporter (%s) unstable; urgency=medium\n\n' "$VERSION"
			printf '  * Snapshot of git commit %s.\n\n' "$REVISION"
			printf ' -- %s  %s\n\n' "$maint" "$(git -C "$top" log -1 --format=%aD HEAD)"
			cat "$cl"
		} >"$cl.new"
		mv "$cl.new" "$cl"
	else
		sed -i "1s/(\([^)]*\))/($VERSION)/" "$cl"
	fi
fi

echo "build-deb: cachestat-exporter $VERSION (revision $REVISION) in $src" >&2
(cd "$src" && CACHESTAT_REVISION=$REVISION dpkg-buildpackage -us -uc >"$out/build.log" 2>&1) || {
	tail -n 30 "$out/build.log" >&2
	echo "build-deb: dpkg-buildpackage failed; the log is $out/build.log" >&2
	exit 1
}
changes=$(ls "$out"/cachestat-exporter_*.changes)
if ! lintian --fail-on error,warning --no-tag-display-limit "$changes" >"$out/lintian.log" 2>&1 ||
	grep -q '^[EW]:' "$out/lintian.log"; then
	cat "$out/lintian.log" >&2
	echo "build-deb: lintian reported errors or warnings" >&2
	exit 1
fi
ls "$out"/cachestat-exporter_*.deb
