#!/usr/bin/env bash
# Builds the Debian package (debian/), checks it with lintian, installs it on
# this machine, runs MPI tests from the installed copy with Open MPI's default
# component path only (no scripts/env.sh), links a program against the
# installed engine library, removes the package and checks that every file it
# installed is gone and Open MPI's component directory is as before.
#
# The package is built from scratch in a fresh copy of the tree under
# $UM_PKG_DIR (default /var/tmp/ubermatch-pkg): a kept build was tried, but
# debhelper configures without dependency tracking, so a changed header left
# stale objects behind. Runs as root (dpkg -i / dpkg -r).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
work=${UM_PKG_DIR:-/var/tmp/ubermatch-pkg}
src=$work/src

# The packaging tools, only for this step.
tools=(debhelper dh-autoreconf lintian fakeroot)
missing=()
for p in "${tools[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing packaging tools: ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if dpkg-query -W -f='${Status}' ubermatch 2>/dev/null | grep -q 'install ok installed'; then
    echo "ubermatch is already installed: remove it first (dpkg -r ubermatch)" >&2
    exit 1
fi

# Copy the tree (tracked and untracked-but-not-ignored files).
rm -rf "$src"
mkdir -p "$src"
(cd "$top" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -C "$src" -xpf -
rm -f "$src"/debian/debhelper-build-stamp "$src"/debian/*.debhelper.log
rm -f "$work"/ubermatch_*.deb
echo "== dpkg-buildpackage -b -us -uc (in $src)"
(cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=2" \
    dpkg-buildpackage -b -us -uc > "$work/build.log" 2>&1) ||
    { tail -40 "$work/build.log"; echo "package build failed (log: $work/build.log)"; exit 1; }
deb=$(ls "$work"/ubermatch_*.deb)

echo "== lintian $(basename "$deb")"
lintian --info --suppress-tags-from-file "$top/debian/lintian-explained" "$deb" | tee "$work/lintian.log" || true
if grep -q '^E:' "$work/lintian.log"; then echo "lintian reported errors"; exit 1; fi

echo "== files"
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | tee "$work/files"

sysdir=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')
before=$(ls "$sysdir")
fail=0
check() { # description, command...
    local what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; fail=1; fi
}

# The run from the installed copy, as a user would: no component path, no env.sh
# (the test programs are the build tree's, build/test/mpi/: they use MPI only).
mpi_run() {
    env -u OMPI_MCA_mca_base_component_path OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        MPI_TESTS_ONLY="pingpong ordering" "$top/test/mpi/run-mpi-tests.sh" "$work/mpi-tests" \
        --mca pml ubermatch --mca pml_ubermatch_verbose 1
}
linked_demo() {
    cc -O2 -Wall -Werror -o "$work/standalone" "$top/test/package/standalone.c" -lubermatch &&
        "$work/standalone"
}

echo "== dpkg -i"
dpkg -i "$deb"
check "components in Open MPI's directory" test -f "$sysdir/mca_pml_ubermatch.so" -a -f "$sysdir/mca_coll_ubermatch.so"
version=$(dpkg-deb -f "$deb" Version)
for fw in pml coll; do
    check "ompi_info shows $fw ubermatch, component v$version" sh -c \
        "env -u OMPI_MCA_mca_base_component_path ompi_info | grep -q 'MCA $fw: ubermatch .*Component v$version)'"
done
check "MPI tests from the installed copy" mpi_run
check "engine_demo installed" sh -c 'engine_demo --list-backends | grep -qw list'
check "standalone program against -lubermatch" linked_demo
check "man page" sh -c 'man -w 7 ubermatch >/dev/null 2>&1 || test -f /usr/share/man/man7/ubermatch.7.gz'
# Each parameter as its type and default, not ompi_info's raw lines (mawk once left them whole).
check "man page lists parameters with type and default" sh -c \
    'page=$(zcat /usr/share/man/man7/ubermatch.7.gz) && printf "%s\n" "$page" | grep -qx "(string, default .fIauto.fR)" &&
     ! printf "%s\n" "$page" | grep -q "mca:pml:ubermatch:param"'

echo "== dpkg -r"
dpkg -r ubermatch
left=0
while read -r f; do
    f=${f#.}
    if [ -e "$f" ] || [ -L "$f" ]; then echo "left behind: $f"; left=1; fi
done < "$work/files"
check "every packaged file removed" test "$left" -eq 0
check "Open MPI's component directory as before" test "$before" = "$(ls "$sysdir")"
# Without the package the same run must fail: the run above did use it.
if mpi_run > "$work/after-remove.log" 2>&1; then
    echo "FAILED: the MPI run still passes with the package removed"; fail=1
else
    echo "ok: the MPI run fails once removed"
fi
[ "$fail" -eq 0 ] && echo "package test: passed" || { echo "package test: FAILED"; exit 1; }
