#!/usr/bin/env bash
# Installs the Debian 12 packages ubermatch needs, when any is missing.
# Runs as root (or with sudo available); does nothing when all are present.
set -euo pipefail

packages=(
    build-essential autoconf automake libtool pkgconf
    libopenmpi-dev openmpi-bin libucx-dev ucx-utils libhwloc-dev
    catch2 libbenchmark-dev gnuplot-nox python3
    iproute2 # test/multihost: network namespaces
    util-linux-extra # replay/test-replay.sh: fincore (a trace written with direct I/O is not in the page cache)
    libotf2-trace-dev otf2-tools # ubermatch-replay --otf2; its test reads the archive with otf2-print
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing Debian packages: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
