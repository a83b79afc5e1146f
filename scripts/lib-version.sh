# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The version of a build, from git tags: vX.Y.Z at the commit gives X.Y.Z; N commits after it,
# X.Y.Z+gitN.gHASH; before any tag, LAST~gitN.gHASH, LAST being the newest release of
# CHANGELOG.md (so it sorts before the release it leads to). A tree with uncommitted changes
# or untracked files appends .dirty. Usage: version_of DIR; sets VERSION and REVISION (the short hash).

# The newest release heading of CHANGELOG.md ("## X.Y.Z - DATE"; "## Unreleased" is skipped).
changelog_md_version() {
	sed -n 's/^## \([0-9][0-9A-Za-z.+~]*\) - .*/\1/p' "$1/CHANGELOG.md" | head -n 1
}

# The version of the newest entry of debian/changelog.
debian_changelog_version() {
	sed -n '1s/^[a-z0-9.+-]* (\([^)]*\)).*/\1/p' "$1/debian/changelog"
}

# shellcheck disable=SC2034 # VERSION and REVISION are for the caller
version_of() {
	local dir=$1 desc tag n dirty=""

	REVISION=$(git -C "$dir" rev-parse --short=12 HEAD)
	[ -z "$(git -C "$dir" status --porcelain)" ] || dirty=.dirty
	if desc=$(git -C "$dir" describe --tags --long --match 'v[0-9]*' HEAD 2>/dev/null); then
		tag=${desc%-*-g*}
		tag=${tag#v}
		n=${desc%-g*}
		n=${n##*-}
		if [ "$n" = 0 ]; then
			VERSION=$tag$dirty
		else
			VERSION=$tag+git$n.g${REVISION:0:7}$dirty
		fi
	else
		n=$(git -C "$dir" rev-list --count HEAD)
		VERSION=$(changelog_md_version "$dir")~git$n.g${REVISION:0:7}$dirty
	fi
}
