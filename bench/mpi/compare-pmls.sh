#!/usr/bin/env bash
# Compare Open MPI PMLs with p2p_bench: 8-byte latency, 8-byte message rate and
# 1 MiB bandwidth, for ob1, ucx and ubermatch, as a markdown table with the ratios
# ubermatch/ob1 and ubermatch/ucx. The PMLs run in turns, --rounds times (these
# virtual machines change speed within seconds: one run each would compare
# draws); each value is the median of its rounds, with their range.
# (bench/mpi/message-path.sh measures every size and UCX's own floor.)
#
#   bash bench/mpi/compare-pmls.sh [BUILD_DIR] [--out FILE] [--pmls "ob1 ucx ubermatch"]
#                                  [--bench-args "--reps 5 --time 1"] [--rounds 3]
#
# BUILD_DIR (default /tmp/um-bench) receives the p2p_bench binary.
# UM_MPIRUN_ARGS: extra mpirun arguments for the ubermatch runs only (e.g.
#   "--mca pml_ubermatch_backend list", or "--mca mca_base_component_path
#   /path/to/components:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"); ubermatch
#   runs its default backend (auto) otherwise.
# MPIRUN_ARGS: extra mpirun arguments for every run.
# RUN_TIMEOUT: seconds before one mpirun is killed (default 120).
# A PML that cannot run (ubermatch until the component exists) is reported as
# "not available" and the script goes on. Exit code: 0 when ob1 and ucx (or the
# PMLs asked for, except ubermatch) all produced numbers, 1 otherwise.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=/tmp/um-bench
out=
pmls="ob1 ucx ubermatch"
bench_args=
rounds=3
while [ $# -gt 0 ]; do
    case $1 in
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    --pmls) pmls=$2; shift 2 ;;
    --bench-args) bench_args=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "compare-pmls.sh: unknown option $1" >&2; exit 2 ;;
    *) build=$1; shift ;;
    esac
done

mkdir -p "$build" || exit 2
echo "building $build/p2p_bench"
mpicc -O2 -Wall -Wextra -Werror -o "$build/p2p_bench" "$here/p2p_bench.c" || { echo "compare-pmls.sh: build failed" >&2; exit 2; }

case $rounds in '' | *[!0-9]* | 0) echo "compare-pmls.sh: --rounds takes a positive integer, not '$rounds'" >&2; exit 2 ;; esac
# One rank per core: unbound ranks that the scheduler moves made one PML 3x
# slower in one launch out of two (bench/mpi/message-path.sh).
mpirun_base=(mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core)
# shellcheck disable=SC2206 # word splitting of the user's extra arguments is intended
extra_all=(${MPIRUN_ARGS:-})
timeout_s=${RUN_TIMEOUT:-120}

pml_args() {
    case $1 in
    ob1) echo "--mca pml ob1" ;;
    ucx) echo "--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any" ;;
    ubermatch) echo "--mca pml ubermatch ${UM_MPIRUN_ARGS:-}" ;;
    *) echo "--mca pml $1" ;;
    esac
}

measures=("latency 8" "rate 8" "bw 1M")
labels=("latency, 8 B (µs, lower is better)" "message rate, 8 B (msg/s)" "bandwidth, 1 MiB (MB/s)")

declare -A value      # value[pml,i]
declare -A status     # status[pml] = ok | not available | partial
declare -A spread     # spread[pml,i] = "min-max" of the rounds
# Idle share of all CPUs over half a second, from /proc/stat (other jobs on these cores skew the numbers).
cpu_idle_pct() {
    local a b
    read -ra a < <(grep '^cpu ' /proc/stat)
    sleep 0.5
    read -ra b < <(grep '^cpu ' /proc/stat)
    local total=0 i
    for i in 1 2 3 4 5 6 7 8; do total=$((total + b[i] - a[i])); done
    local idle=$((b[4] - a[4] + b[5] - a[5]))
    [ "$total" -gt 0 ] && echo $((100 * idle / total)) || echo 100
}
min_idle=100
log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=0

declare -A runs # runs[pml,i]: that measure's values, one per round
for pml in $pmls; do status[$pml]=ok; done
for round in $(seq 1 "$rounds"); do
    for pml in $pmls; do
        [ "${status[$pml]}" = "not available" ] && continue
        # shellcheck disable=SC2207
        args=($(pml_args "$pml"))
        for i in "${!measures[@]}"; do
            read -ra bargs <<<"$bench_args"
            read -ra measure <<<"${measures[$i]}"
            cmd=("${mpirun_base[@]}" "${extra_all[@]}" "${args[@]}" "$build/p2p_bench" "${bargs[@]}" "${measure[@]}")
            idle=$(cpu_idle_pct)
            [ "$idle" -lt "$min_idle" ] && min_idle=$idle
            echo "+ [round $round/$rounds] ${cmd[*]}   (CPUs ${idle}% idle before)"
            timeout "$timeout_s" "${cmd[@]}" >"$log" 2>&1
            rc=$?
            line=$(grep -m1 '^mode=' "$log")
            if [ $rc -eq 0 ] && [ -n "$line" ]; then
                v=${line#*value=}
                runs[$pml,$i]="${runs[$pml,$i]:-} ${v%% *}"
                grep '^#' "$log"
            else
                echo "  $pml: ${measures[$i]} failed (exit $rc$([ $rc -eq 124 ] && echo ", timed out after ${timeout_s} s")):"
                # Open MPI's own explanation when it has one (component not found, MPI_Init failure), else the tail.
                if grep -qE 'Component:|--> Returned' "$log"; then
                    grep -E 'Framework:|Component:|--> Returned|^  [a-z_]+\(\) failed' "$log" | head -n 6 | sed 's/^/    /'
                else
                    grep -v '^-*$' "$log" | tail -n 8 | sed 's/^/    /'
                fi
                if [ "$i" -eq 0 ] && [ -z "${runs[$pml,0]:-}" ]; then
                    # The first measure failing at once means the PML does not run here: skip it.
                    status[$pml]="not available"
                    break
                fi
                status[$pml]=partial
            fi
        done
    done
done
# value[pml,i]: the median of the rounds; spread[pml,i]: their range.
for pml in $pmls; do
    for i in "${!measures[@]}"; do
        vals=${runs[$pml,$i]:-}
        [ -z "$vals" ] && continue
        read -r value[$pml,$i] spread[$pml,$i] < <(echo "$vals" | tr ' ' '\n' | grep . | sort -g |
            awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                                      printf "%s %s-%s\n", m, v[1], v[NR] }')
    done
    if [ "${status[$pml]}" != ok ] && [ "$pml" != ubermatch ]; then failed=1; fi
done

ratio() { # ratio A B: A/B with 2 decimals, or n/a
    if [ -n "$1" ] && [ -n "$2" ]; then awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.2f", a / b }'
    else echo "n/a"; fi
}
fmt() { # value as shown in the table
    if [ -z "$1" ]; then echo "n/a"
    else awk -v v="$1" 'BEGIN { if (v >= 1e5) printf "%.3g M", v / 1e6; else if (v >= 100) printf "%.0f", v; else printf "%.3f", v }'; fi
}

has_um=0; has_ob1=0; has_ucx=0
for pml in $pmls; do
    case $pml in ubermatch) has_um=1 ;; ob1) has_ob1=1 ;; ucx) has_ucx=1 ;; esac
done

table=$(
    printf '| measure |'
    for pml in $pmls; do printf ' %s |' "$pml"; done
    [ $has_um = 1 ] && [ $has_ob1 = 1 ] && printf ' ubermatch/ob1 |'
    [ $has_um = 1 ] && [ $has_ucx = 1 ] && printf ' ubermatch/ucx |'
    printf '\n| --- |'
    for _ in $pmls; do printf ' ---: |'; done
    [ $has_um = 1 ] && [ $has_ob1 = 1 ] && printf ' ---: |'
    [ $has_um = 1 ] && [ $has_ucx = 1 ] && printf ' ---: |'
    printf '\n'
    for i in "${!measures[@]}"; do
        printf '| %s |' "${labels[$i]}"
        for pml in $pmls; do
            if [ "${status[$pml]}" = "not available" ]; then printf ' not available |'
            elif [ -z "${value[$pml,$i]:-}" ]; then printf ' n/a |'
            else
                lo=${spread[$pml,$i]%-*} hi=${spread[$pml,$i]#*-}
                printf ' %s (%s-%s) |' "$(fmt "${value[$pml,$i]}")" "$(fmt "$lo")" "$(fmt "$hi")"
            fi
        done
        [ $has_um = 1 ] && [ $has_ob1 = 1 ] && printf ' %s |' "$(ratio "${value[ubermatch,$i]:-}" "${value[ob1,$i]:-}")"
        [ $has_um = 1 ] && [ $has_ucx = 1 ] && printf ' %s |' "$(ratio "${value[ubermatch,$i]:-}" "${value[ucx,$i]:-}")"
        printf '\n'
    done
)

notes="2 ranks, \`mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core${MPIRUN_ARGS:+ ${MPIRUN_ARGS}}\`; $(nproc) cores, $(mpirun --version 2>/dev/null | head -n1),
$(date -u '+%Y-%m-%d %H:%M UTC'); CPUs at least ${min_idle}% idle just before each run$([ "$min_idle" -lt 90 ] && echo " (WARNING: other processes were running; numbers are skewed)").
The PMLs ran in turns, $rounds rounds; each value is the median of the rounds (their range in brackets), each
round's value the median of p2p_bench's repetitions (${bench_args:-default: 5 repetitions, about 1 s in all}).
Ratios are of the medians: above 1 is better for rate and bandwidth, worse for latency. ucx runs with
\`--mca pml_ucx_tls any --mca pml_ucx_devices any\`; ubermatch with its default backend${UM_MPIRUN_ARGS:+ and \`${UM_MPIRUN_ARGS}\`}."

echo
echo "$table"
echo
echo "$notes"
if [ -n "$out" ]; then
    mkdir -p "$(dirname "$out")"
    { echo "$table"; echo; echo "$notes"; } >"$out"
    echo "written to $out"
fi
exit $failed
