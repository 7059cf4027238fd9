#!/usr/bin/env bash
# The deep-queue MPI benchmarks of issue 6, for ob1, pml_ucx and ubermatch with
# every engine backend: CSV, one gnuplot PNG per measure and a markdown summary.
#
#   bash bench/run-all.sh [--quick] [--out DIR] [--reps R] [--time T] [--flush SIZE]
#                         [--depths LIST] [--np-multi "P ..."] [--configs "ob1 ucx ubermatch:list ..."]
#                         [--wait-idle S] [--no-build]
#
# Measures (bench/mpi/queue_bench, seed 003 section VI-A: a window of 64
# nonblocking sends, receives pre-posted behind a synchronisation, the cache
# cleared between iterations, N non-matching entries queued first):
#   2 ranks:   message rate of 1 B and bandwidth of 4 KiB messages behind N exact
#              posted receives and behind N unexpected messages; message rate of
#              1 B behind N ANY_SOURCE posted receives;
#   multi-peer (np P, oversubscribed): message rate of 1 B behind N posted
#              receives and N unexpected messages spread over the P-1 other ranks
#              (the window comes from rank 1, so ob1 and perpeer search N/(P-1)).
#   memory:    bench/mpi/queue_memory --np 64 (and 1024): engine bytes per
#              communicator of every backend against ob1's per-peer structures.
# N = 0, 16, 128, 1024, 8192 (--depths). Configurations: ob1 (btl self,vader),
# ucx (pml_ucx_tls/devices any), ubermatch with every backend that
# `engine_demo --list-backends` prints. One mpirun per configuration and np.
#
# Default (the full run): 3 repetitions of about 0.3 s per point (median kept),
# flush 8 MiB (rank 0 and the window's sender write over 8 MiB before each
# iteration: 4 times the 2 MiB L2 per core; twice this VM's 480 MiB L3 would cost
# ~0.1 s an iteration), multi-peer at np 8 and 32; about 15 minutes on the
# project's 2-core machine.
# --quick: 1 repetition of 0.15 s, N = 0, 128, 8192, multi-peer at np 8: ~2 minutes.
# --flush 0 turns the cache clearing off; --flush llc clears twice the L3.
#
# Output in DIR (default docs/perf; with --quick build/perf-quick): deepq.csv (every
# point), memory.csv, one PNG per measure, results.md (tables, machine, settings).
# Progress: one line per point as it is measured, elapsed time and an estimate of
# what is left per run. Builds first (scripts/build.sh) unless --no-build.
# RUN_TIMEOUT: seconds before one mpirun is killed (default 900).
# --wait-idle S: before each mpirun wait up to S seconds for the CPUs to be 90% idle
# (a machine shared with builds: one busy core leaves the 2 ranks one core, and
# every window then waits for a scheduler time slice).
# Exit code: 0 all runs complete, 1 some run failed (the rest is still written), 2 usage.
set -u

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top" || exit 2
cmdline="bash bench/run-all.sh${*:+ $*}"
quick=0 out='' reps='' time_s='' flush=8M depths='' np_multi='' configs_arg='' build_first=1 wait_idle=0
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1; shift ;;
    --out) out=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --time) time_s=$2; shift 2 ;;
    --flush) flush=$2; shift 2 ;;
    --depths) depths=$2; shift 2 ;;
    --np-multi) np_multi=$2; shift 2 ;;
    --configs) configs_arg=$2; shift 2 ;;
    --no-build) build_first=0; shift ;;
    --wait-idle) wait_idle=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "run-all.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
if [ $quick = 1 ]; then
    : "${reps:=1}" "${time_s:=0.15}" "${depths:=0,128,8192}" "${np_multi:=8}" "${out:=build/perf-quick}"
else
    : "${reps:=3}" "${time_s:=0.9}" "${depths:=0,16,128,1024,8192}" "${np_multi:=8 32}" "${out:=docs/perf}"
fi

if [ $build_first = 1 ]; then
    echo "== building (scripts/build.sh)"
    bash scripts/build.sh || { echo "run-all.sh: build failed" >&2; exit 2; }
fi
build=${UM_BUILD:-$top/build}
bench=$build/bench/mpi/queue_bench
for f in "$bench" "$build/bench/mpi/queue_memory" "$build/examples/engine_demo"; do
    [ -x "$f" ] || { echo "run-all.sh: $f missing; run bash scripts/build.sh" >&2; exit 2; }
done
# shellcheck source=scripts/env.sh
. scripts/env.sh
# shellcheck source=bench/mpi/common.sh
. bench/mpi/common.sh
command -v gnuplot >/dev/null || echo "run-all.sh: gnuplot missing (bash scripts/install-deps.sh): no PNGs" >&2

if [ -n "$configs_arg" ]; then
    read -ra configs <<<"$configs_arg"
else
    mapfile -t backends < <("$build/examples/engine_demo" --list-backends)
    [ ${#backends[@]} -gt 0 ] || { echo "run-all.sh: engine_demo --list-backends printed nothing" >&2; exit 2; }
    configs=(ob1 ucx "${backends[@]/#/ubermatch:}")
fi
label() { case $1 in ucx) echo pml_ucx ;; ubermatch:*) echo "${1#ubermatch:}" ;; *) echo "$1" ;; esac; }

# The points of each run.
IFS=, read -ra dlist <<<"$depths"
two_rank=()
for shape in posted unexpected; do
    for size in 1 4096; do
        for d in "${dlist[@]}"; do two_rank+=("$shape:$d:$size"); done
    done
done
for d in "${dlist[@]}"; do two_rank+=("anysrc:$d:1"); done
multi=()
for shape in posted unexpected; do
    for d in "${dlist[@]}"; do multi+=("$shape:$d:1"); done
done
read -ra nps <<<"$np_multi"
runs=()
for cfg in "${configs[@]}"; do
    runs+=("$cfg 2")
    for p in "${nps[@]}"; do runs+=("$cfg $p"); done
done

mkdir -p "$out" || exit 2
csv=$out/deepq.csv
echo "pml,backend,config,np,senders,shape,depth,size,msgs_per_s,mb_per_s,min_msgs_per_s,max_msgs_per_s,mean_msgs_per_s,reps,iters,flush_bytes" >"$csv"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
t_start=$(date +%s)
min_idle=100
failed_runs=()
mmss() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }
echo "== ${#runs[@]} runs (${#configs[@]} configurations x np 2${np_multi:+, $np_multi}), $reps reps of ~$(awk -v t="$time_s" -v r="$reps" 'BEGIN { printf "%.2g", t / r }') s per point, N = $depths, flush $flush; output in $out"

for k in "${!runs[@]}"; do
    read -r cfg np <<<"${runs[$k]}"
    if [ "$np" = 2 ]; then pts=("${two_rank[@]}"); else pts=("${multi[@]}"); fi
    # shellcheck disable=SC2207
    args=($(um_pml_args "$cfg"))
    w0=$SECONDS
    idle=$(um_wait_idle "$wait_idle")
    waited=$((SECONDS - w0))
    [ "$idle" -lt "$min_idle" ] && min_idle=$idle
    now=$(date +%s)
    eta=
    [ "$k" -gt 0 ] && eta=", ~$(mmss $(((now - t_start) * (${#runs[@]} - k) / k))) left"
    echo "[$((k + 1))/${#runs[@]}] $(label "$cfg") np $np: ${#pts[@]} points (elapsed $(mmss $((now - t_start)))$eta; CPUs ${idle}% idle$([ $waited -gt 1 ] && echo " after waiting $waited s"))"
    cmd=(mpirun -np "$np" --bind-to none "${args[@]}" "$bench" --points "$(IFS=,; echo "${pts[*]}")"
         --reps "$reps" --time "$time_s" --flush "$flush")
    pml=${cfg%%:*} be=
    [ "$pml" = ubermatch ] && be=${cfg#ubermatch:}
    timeout "${RUN_TIMEOUT:-900}" "${cmd[@]}" 2>&1 | tee "$log" | while read -r line; do
        case $line in shape=*) ;; *) continue ;; esac
        declare -A kv
        um_parse_line kv "$line"
        mb=$(awk -v v="${kv[value]}" -v s="${kv[size]}" 'BEGIN { printf "%.3f", v * s / 1e6 }')
        echo "$pml,$be,$(label "$cfg"),${kv[np]},${kv[senders]},${kv[shape]},${kv[depth]},${kv[size]},${kv[value]},$mb,${kv[min]},${kv[max]},${kv[mean]},${kv[reps]},${kv[iters]},${kv[flush]}" >>"$csv"
        printf '    %-10s N=%-5s %4s B: %s msg/s, %s MB/s\n' "${kv[shape]}" "${kv[depth]}" "${kv[size]}" \
            "$(awk -v v="${kv[value]}" 'BEGIN { printf "%.4g", v }')" "$mb"
    done
    rc=${PIPESTATUS[0]}
    got=$(grep -c '^shape=' "$log")
    if [ "$rc" -ne 0 ] || [ "$got" -ne ${#pts[@]} ]; then
        failed_runs+=("$(label "$cfg") np $np")
        echo "    FAILED (exit $rc$([ "$rc" -eq 124 ] && echo ", timed out"), $got of ${#pts[@]} points):"
        grep -v '^shape=\|^#\|^-*$' "$log" | tail -n 8 | sed 's/^/      /'
    fi
done

echo "== memory (queue_memory --np 64 and --np 1024)"
"$build/bench/mpi/queue_memory" --np 64 --csv >"$out/memory.csv"
"$build/bench/mpi/queue_memory" --np 1024 --csv | tail -n +2 >>"$out/memory.csv"
memory_md=
for p in 64 1024; do
    "$build/bench/mpi/queue_memory" --np "$p" >"$log"
    cat "$log"
    memory_md+="$(cat "$log")"$'\n\n'
done

# One measure = (np, shape, size, value column, unit, title); a wide CSV (rows N,
# columns configurations) feeds the plot and the table.
measures=(
    "2 posted 1 msgs msg/s|message rate, 1 B, behind N exact posted receives (2 ranks)"
    "2 posted 4096 mb MB/s|bandwidth, 4 KiB, behind N exact posted receives (2 ranks)"
    "2 unexpected 1 msgs msg/s|message rate, 1 B, behind N unexpected messages (2 ranks)"
    "2 unexpected 4096 mb MB/s|bandwidth, 4 KiB, behind N unexpected messages (2 ranks)"
    "2 anysrc 1 msgs msg/s|message rate, 1 B, behind N ANY_SOURCE posted receives (2 ranks)"
)
for p in "${nps[@]}"; do
    measures+=("$p posted 1 msgs msg/s|message rate, 1 B, behind N posted receives spread over $((p - 1)) sources (np $p)"
               "$p unexpected 1 msgs msg/s|message rate, 1 B, behind N unexpected messages from $((p - 1)) sources (np $p)")
done
labels=()
for cfg in "${configs[@]}"; do labels+=("$(label "$cfg")"); done
fmt_value() { # value unit
    awk -v v="$1" -v u="$2" 'BEGIN { if (v == "") print "—"; else if (u == "MB/s") printf "%.0f", v;
        else if (v >= 1e6) printf "%.2f M", v / 1e6; else printf "%.1f k", v / 1e3 }'
}
tables=
wide_dir=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$wide_dir"' EXIT
for m in "${measures[@]}"; do
    read -r np shape size col unit <<<"${m%%|*}"
    title=${m#*|}
    name=$([ "$col" = mb ] && echo bw || echo rate)-$shape-$([ "$size" = 4096 ] && echo 4KiB || echo "${size}B")$([ "$np" != 2 ] && echo "-np$np")
    colno=$([ "$col" = mb ] && echo 10 || echo 9)
    wide=$wide_dir/$name.csv
    {
        printf 'N'; printf ',%s' "${labels[@]}"; printf '\n'
        for d in "${dlist[@]}"; do
            printf '%s' "$d"
            for l in "${labels[@]}"; do
                printf ',%s' "$(awk -F, -v c="$l" -v n="$np" -v s="$shape" -v z="$size" -v d="$d" -v k="$colno" \
                    '$3 == c && $4 == n && $6 == s && $8 == z && $7 == d { print $k; exit }' "$csv")"
            done
            printf '\n'
        done
    } >"$wide"
    if command -v gnuplot >/dev/null; then
        gnuplot -e "in='$wide'; out='$out/$name.png'; ttl='$title'; ylab='$unit'; ncol=$((${#labels[@]} + 1))" \
            bench/plot-deepq.gp || echo "run-all.sh: gnuplot failed for $name" >&2
    fi
    # Table: rows configurations, columns N.
    t="### $title"$'\n\n'"![$name]($name.png)"$'\n\n'"| $unit | $(printf 'N = %s | ' "${dlist[@]}")"$'\n'"| --- |$(printf ' ---: |%.0s' "${dlist[@]}")"
    for i in "${!labels[@]}"; do
        row="| ${labels[$i]} |"
        for j in "${!dlist[@]}"; do
            row+=" $(fmt_value "$(awk -F, -v r=$((j + 2)) -v c=$((i + 2)) 'NR == r { print $c }' "$wide")" "$unit") |"
        done
        t+=$'\n'"$row"
    done
    tables+="$t"$'\n\n'
done

t_total=$(($(date +%s) - t_start))
{
    echo "# Deep-queue benchmarks: results"
    echo
    echo "Generated by \`$cmdline\` ($([ $quick = 1 ] && echo "the QUICK smoke run" || echo "the full run")) on $(date -u '+%Y-%m-%d %H:%M UTC') in $(mmss $t_total) (min:s)."
    echo "Machine: $(um_machine)."
    echo "Settings: $reps repetition(s) of about $(awk -v t="$time_s" -v r="$reps" 'BEGIN { printf "%.2g", t / r }') s per point (median kept), window 64, rank 0 and the window's sender write over $flush bytes before each iteration (\`--flush\`), N = $depths, multi-peer np $np_multi (oversubscribed, \`--bind-to none\`)."
    echo "CPUs at least ${min_idle}% idle just before each run$([ "$min_idle" -lt 90 ] && echo " (WARNING: other processes were running; numbers are skewed)")."
    [ ${#failed_runs[@]} -gt 0 ] && echo "FAILED runs (no or partial numbers): ${failed_runs[*]}."
    echo "Every point: \`deepq.csv\`. Method: \`bench/mpi/queue_bench.c\`; configurations: ob1 \`--mca pml ob1 --mca btl self,vader\`, pml_ucx \`--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any\`, the others \`--mca pml ubermatch --mca pml_ubermatch_backend NAME\`."
    echo
    echo "$tables"
    echo "### Memory"
    echo
    echo "$memory_md"
} >"$out/results.md"

echo "== done in $(mmss $t_total): $out/deepq.csv, $out/memory.csv, $out/results.md, $(find "$out" -maxdepth 1 -name "*.png" | wc -l) PNGs"
if [ ${#failed_runs[@]} -gt 0 ]; then
    echo "FAILED runs: ${failed_runs[*]}"
    exit 1
fi
exit 0
