# Sourced by the scripts that run concurrent tests under ThreadSanitizer
# (tailq_tsan.sh, trace_tsan.sh), from the repository's root: builds into
# build-tsan/ (g++ only, no configure) with `tsan_program NAME SOURCE...`, the
# engine and the sources linked into build-tsan/NAME. An object is rebuilt when
# its source, or any header of matching/ or test/engine/, is newer.
out=build-tsan
mkdir -p "$out"
tsan_flags="-std=c++17 -O1 -g -fsanitize=thread -Wall -Wextra -Wpedantic -Wshadow -Werror -I."

tsan_object() { # source, extra flags; appends the object to tsan_objs
    local o
    o="$out/$(echo "$1" | tr / _).o"
    if [ ! -e "$o" ] || [ "$1" -nt "$o" ] || [ -n "$(find matching test/engine -name '*.h' -newer "$o")" ]; then
        # shellcheck disable=SC2086
        g++ $tsan_flags ${2:-} -c "$1" -o "$o"
    fi
    tsan_objs+=("$o")
}

tsan_program() { # name, sources
    local name=$1 f
    shift
    tsan_objs=()
    for f in matching/*.cc matching/simd/dispatch.cc matching/simd/kernels_scalar.cc; do tsan_object "$f"; done
    tsan_object matching/simd/kernels_avx2.cc -mavx2
    tsan_object matching/simd/kernels_avx512.cc "-mavx512f -mavx512bw -mavx512vl -mavx512dq"
    for f in "$@"; do tsan_object "$f"; done
    g++ -fsanitize=thread -o "$out/$name" "${tsan_objs[@]}" -lpthread
}
