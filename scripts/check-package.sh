#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package (debian/) and what it must agree with:
#  - the man page names every flag of `cachestat_exporter --help` and no other, and groff renders
#    it without a warning;
#  - CHANGELOG.md, debian/changelog and exporter/Makefile's fallback name the same release, and
#    the two changelogs the same releases;
#  - versions from git tags (scripts/lib-version.sh), in a scratch repository: before a tag,
#    at it, after it, with uncommitted changes;
#  - --version names the cachestat form the running kernel serves;
#  - the unit runs as the user that postinst creates; the DaemonSet names the image of make image;
#  - `make deb` (scripts/build-deb.sh) builds, lintian reports no error and no warning, and the
#    .deb holds the binary, the unit, /etc/default as a conffile, the man page; its binary says
#    the package's version; its example config loads, and its example web config serves
#    (scripts/check-web-example.sh).
# One line per check; the last line is "N passed, N failed, N skipped".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
# shellcheck source=scripts/lib-check.sh
. scripts/lib-check.sh
# shellcheck source=scripts/lib-version.sh
. scripts/lib-version.sh

missing=()
for tool in dpkg-buildpackage dh lintian man git; do
	command -v "$tool" >/dev/null || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] || skip_suite "missing ${missing[*]} (scripts/deps.txt; run scripts/install-deps.sh)"

exe=exporter/cachestat_exporter
# shellcheck disable=SC2154 # tmp: made by scripts/lib-check.sh
if ! make -s -C exporter cachestat_exporter >"$tmp/out" 2>&1; then
	ko "the exporter builds"
	finish
fi

# --- the man page -----------------------------------------------------------------------------
man8=exporter/cachestat_exporter.8
# --[no-]collector.NAME stands for both flags; --format=text|json for --format.
"$exe" --help | grep -oE '^  (-h, )?--[][a-z.-]+' | sed -e 's/^  //' -e 's/^-h, /-h\n/' |
	sed -E 's/^--\[no-\](.*)/--\1\n--no-\1/' | sort -u >"$tmp/help"
sed -n '/^\.SH OPTIONS/,/^\.SH [^O]/{/^\.[BI]/p}' "$man8" | grep -oE '\\-(\\-[a-z][a-z.]*(\\-[a-z.]+)*|h\b)' |
	sed 's/\\-/-/g' | sort -u >"$tmp/man"
n=$(wc -l <"$tmp/help")
check "--help lists flags ($n)" test "$n" -gt 10
gone=$(comm -23 "$tmp/help" "$tmp/man" | tr '\n' ' ')
eq "every flag of --help is in $man8" "${gone:-none}" none
extra=$(comm -13 "$tmp/help" "$tmp/man" | tr '\n' ' ')
eq "every flag of $man8 is in --help" "${extra:-none}" none
LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$man8" 2>"$tmp/out" >/dev/null
check "groff renders $man8 without a warning" test ! -s "$tmp/out"
# The config file's and the web config's keys, as their parsers name them (config.c's keys[]
# tables, webconfig.c's scalar_is(k, ...)), each in bold in the man page's sections on them.
sed -n '/static const char \*const keys\[\]/,/NULL/p' exporter/parse/config.c | grep -o '"[a-z_0-9]*"' |
	tr -d '"' >"$tmp/keys"
grep -o 'scalar_is(k, "[a-z_0-9]*")' exporter/http/webconfig.c | sed 's/.*"\(.*\)")/\1/' >>"$tmp/keys"
sort -u -o "$tmp/keys" "$tmp/keys"
sed -n '/^\.SH CONFIGURATION FILE/,/^\.SH PROCESS MODEL/{/^\.BR\? /p}' "$man8" | grep -oE '[a-z_0-9]+' |
	sort -u >"$tmp/mankeys"
n=$(wc -l <"$tmp/keys")
check "the parsers name config and web config keys ($n)" test "$n" -gt 20
gone=$(comm -23 "$tmp/keys" "$tmp/mankeys" | tr '\n' ' ')
eq "every key of the config file and the web config is in $man8" "${gone:-none}" none

# --- versions ---------------------------------------------------------------------------------
md=$(changelog_md_version .)
deb=$(debian_changelog_version .)
fallback=$(sed -n 's/^FALLBACK_VERSION := //p' exporter/Makefile)
eq "debian/changelog's newest entry is CHANGELOG.md's newest release" "$deb" "$md"
eq "exporter/Makefile's FALLBACK_VERSION is CHANGELOG.md's newest release" "$fallback" "$md"
diff <(sed -n 's/^## \([0-9][^ ]*\) - .*/\1/p' CHANGELOG.md) \
	<(sed -n 's/^cachestat-exporter (\([^)+~]*\)).*/\1/p' debian/changelog) >"$tmp/out" 2>&1
check "CHANGELOG.md and debian/changelog hold the same releases" test ! -s "$tmp/out"

# A scratch repository whose history is known: the version at each step is written out here.
repo=$tmp/repo
mkdir -p "$repo"
cp CHANGELOG.md "$repo/"
git -C "$repo" init -q
gitq() { git -C "$repo" -c user.name=t -c user.email=t@t -c commit.gpgsign=false "$@" >/dev/null; }
gitq add CHANGELOG.md && gitq commit -q -m one && gitq commit -q --allow-empty -m two
h=$(git -C "$repo" rev-parse --short=7 HEAD)
version_of "$repo"
eq "version before any tag" "$VERSION" "$md~git2.g$h"
gitq tag -a v9.8.7 -m v9.8.7
version_of "$repo"
eq "version at the tag v9.8.7" "$VERSION" 9.8.7
gitq commit -q --allow-empty -m three
h=$(git -C "$repo" rev-parse --short=7 HEAD)
version_of "$repo"
eq "version one commit after the tag" "$VERSION" "9.8.7+git1.g$h"
echo x >>"$repo/CHANGELOG.md"
version_of "$repo"
eq "version with an uncommitted change" "$VERSION" "9.8.7+git1.g$h.dirty"

# --- --version's kernel line ------------------------------------------------------------------
# The oracle is the kernel's release: mainline has cachestat from 6.5 on; below, only a kernel
# with this series (seed) does, which uname cannot tell.
abi=$("$exe" --version | sed -n 's/^kernel cachestat: \([a-z]*\).*/\1/p')
IFS=. read -r major minor _ <<<"$(uname -r)"
if [ "$major" -gt 6 ] || { [ "$major" -eq 6 ] && [ "${minor%%[!0-9]*}" -ge 5 ]; }; then
	check "--version on Linux $(uname -r) says mainline or both (says '$abi')" \
		test "$abi" = mainline -o "$abi" = both
else
	check "--version on Linux $(uname -r) says seed or none (says '$abi')" test "$abi" = seed -o "$abi" = none
fi

# --- the image's SBOM (scripts/image-sbom.py) ----------------------------------------------------
run "scripts/test_image_sbom.py" /usr/bin/python3 -m unittest -q scripts/test_image_sbom.py

# --- one version everywhere -------------------------------------------------------------------
# The binary built in the tree says the version of scripts/lib-version.sh (as the .deb and the
# image, which scripts/build-image.sh checks against the .deb, do); at a release tag, that is
# the release the changelogs and the manifests name.
version_of .
got=$("$exe" --version | sed -n '1s/^cachestat_exporter version \([^ ]*\) (revision \([^)]*\)).*/\1 \2/p')
eq "the tree's binary says the git version and revision (scripts/lib-version.sh)" "$got" "$VERSION $REVISION"
image=$(sed -n 's/^ *image: *//p' deploy/kubernetes/base/daemonset.yaml)
eq "the DaemonSet runs the image of make image, tagged with the newest release" "$image" \
	"localhost/cachestat-exporter:$md"
case $VERSION in
*[~+]*) skipped "at a release tag, the manifests' image tag is the tag's version: HEAD is no release tag ($VERSION)" ;;
*) eq "at the release tag v$VERSION the manifests name its image" "$image" "localhost/cachestat-exporter:$VERSION" ;;
esac

# --- the unit and the system user -------------------------------------------------------------
user=$(sed -n 's/^User=//p' deploy/systemd/cachestat-exporter.service)
sed -e ':a' -e '/\\$/{N;s/\\\n//;ba' -e '}' debian/cachestat-exporter.postinst >"$tmp/postinst"
check "the unit's User= ($user) is the user debian/cachestat-exporter.postinst creates" \
	grep -Eq "adduser .*--system.* $user\$" "$tmp/postinst"
for f in service default; do
	check "debian/cachestat-exporter.$f is deploy/systemd's" \
		test "$(readlink -f debian/cachestat-exporter.$f)" = "$top/deploy/systemd/cachestat-exporter.$f"
done

# --- the package ------------------------------------------------------------------------------
head=$(git rev-parse --short=12 HEAD)
if ! scripts/build-deb.sh >"$tmp/out" 2>&1; then
	ko "make deb: builds and lintian reports no error and no warning"
	finish
fi
ok "make deb: builds and lintian reports no error and no warning"
pkg=$(tail -n 1 "$tmp/out")
dpkg-deb -c "$pkg" | awk '{print $NF}' >"$tmp/files"
for f in ./usr/bin/cachestat_exporter ./lib/systemd/system/cachestat-exporter.service \
	./etc/default/cachestat-exporter ./usr/share/man/man8/cachestat_exporter.8.gz \
	./usr/share/doc/cachestat-exporter/copyright \
	./usr/share/doc/cachestat-exporter/examples/config.json \
	./usr/share/doc/cachestat-exporter/examples/web-config.yml \
	./usr/share/doc/cachestat-exporter/examples/fanotify.conf; do
	check "the .deb holds ${f#.}" grep -qx "$f" "$tmp/files"
done
dpkg-deb --ctrl-tarfile "$pkg" | tar -xO ./conffiles >"$tmp/conffiles"
check "/etc/default/cachestat-exporter is a conffile" grep -qx /etc/default/cachestat-exporter "$tmp/conffiles"
mkdir -p "$tmp/root"
dpkg-deb -x "$pkg" "$tmp/root"
version=$(dpkg-deb -f "$pkg" Version)
got=$("$tmp/root/usr/bin/cachestat_exporter" --version | head -n 1)
eq "the packaged binary's --version" "$got" \
	"cachestat_exporter version $version (revision $head)"
# The example config loads (a bad one exits 1 at start, "bad config"); /etc/default names it.
ex=$tmp/root/usr/share/doc/cachestat-exporter/examples
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -n "$cg2" ]; then
	timeout 120 "$tmp/root/usr/bin/cachestat_exporter" --once --config.file="$ex/config.json" \
		--path.cgroupfs="$cg2" >/dev/null 2>"$tmp/out"
	check "the example config.json loads" sh -c "! grep -q 'bad config' '$tmp/out'"
else
	skip "the example config.json loads" "no cgroup2 mount to scan"
fi
# The example web config, as the .deb ships it, against the .deb's binary.
tally scripts/check-web-example.sh "$ex/web-config.yml" "$tmp/root/usr/bin/cachestat_exporter"
check "the fanotify drop-in is shipped disabled (an example, not under /etc or /lib)" \
	sh -c "! grep -q 'service.d/fanotify.conf\$' '$tmp/files'"
check "/etc/default/cachestat-exporter names the example config" \
	grep -q /usr/share/doc/cachestat-exporter/examples/config.json "$tmp/root/etc/default/cachestat-exporter"
finish
