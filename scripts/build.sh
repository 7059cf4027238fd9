#!/usr/bin/env bash
# Configures and builds ubermatch out of tree: build/ (optimized, the
# components) and, with --sanitizers, build-asan/ (ASan+UBSan, engine tests).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

bash scripts/install-deps.sh

if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ]; then
    autoreconf -fi
fi

configure_in() { # dir, configure arguments...
    local dir=$1
    shift
    mkdir -p "$dir"
    if [ ! -f "$dir/Makefile" ]; then
        (cd "$dir" && "$top/configure" -q "$@")
    fi
}

configure_in build CFLAGS="-O2 -g" CXXFLAGS="-O2 -g"
make -C build -j2 -s
if [ "${1:-}" = "--sanitizers" ]; then
    configure_in build-asan --enable-sanitizers CFLAGS="-O1 -g" CXXFLAGS="-O1 -g"
fi
