#!/usr/bin/env bash
# MPI-level multithreaded message rate (issue 13; seed 002 Fig. 8):
# build/bench/mpi/thread_rate under MPI_THREAD_MULTIPLE, 2 ranks, for each
# thread count and queue depth: ubermatch with pml_ubermatch_threading global
# and tailq (each backend given), ob1 and pml_ucx, one after the other at each
# point so that the ratios come from the same minutes. Markdown on stdout, with
# the load and CPU idle share before and after.
#
#   bash bench/threads/mpi-rate.sh [--threads 1,2,4] [--depths 0,64,1024]
#        [--backends list,auto] [--pmls "ob1 ucx"] [--iters 1000] [--reps 3]
#        [--rounds 1] [--bins 8]
#
# --bins B: also ubermatch tailq with pml_ubermatch_tailq_bins B (column
# um:BACKEND:tailq-bB), and its ratio to global.
# --rounds N: at each point every configuration runs N times, in turns (a
# round runs each once), and the table gives the median of the N runs: on a
# shared machine a burst of other work then falls on all configurations.
# Run from a built tree (bash scripts/build.sh) with scripts/env.sh sourced.
# On a 16-core machine: --threads 1,2,4,8 (each rank runs T threads; 2T
# threads in all, plus the progress they drive).
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/mpi/common.sh

threads=1,2,4
depths=0,64,1024
backends=list,auto
pmls="ob1 ucx"
iters=1000
reps=3
rounds=1
bins=
while [ $# -gt 0 ]; do
    case $1 in
    --threads) threads=$2; shift 2 ;;
    --depths) depths=$2; shift 2 ;;
    --backends) backends=$2; shift 2 ;;
    --pmls) pmls=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --bins) bins=$2; shift 2 ;;
    -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "mpi-rate.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
bin=build/bench/mpi/thread_rate
[ -x $bin ] || { echo "mpi-rate.sh: $bin not built (bash scripts/build.sh)" >&2; exit 2; }

configs=""
for b in ${backends//,/ }; do
    configs="$configs um:$b:global um:$b:tailq"
    [ -n "$bins" ] && configs="$configs um:$b:tailq-b$bins"
done
configs="$configs $pmls"

args_of() { # config
    case $1 in
    um:*) local rest=${1#um:} mode
        mode=${rest#*:}
        echo "--mca pml ubermatch --mca pml_ubermatch_backend ${rest%%:*} --mca pml_ubermatch_threading ${mode%-b*}"
        [[ $mode == tailq-b* ]] && echo "--mca pml_ubermatch_tailq_bins ${mode#tailq-b}" ;;
    *) um_pml_args "$1" ;;
    esac
}

echo "# thread_rate: 2 ranks, MPI_THREAD_MULTIPLE, window 64, $iters iterations, median of $reps repetitions per run, median of $rounds runs in turns"
echo
echo "machine: $(um_machine)"
echo "before: load $(cut -d' ' -f1-3 /proc/loadavg), CPUs $(um_cpu_idle_pct)% idle, $(date -u '+%F %H:%M UTC')"
echo
header="| threads | depth |"
sep="| ---: | ---: |"
for c in $configs; do header="$header $c |"; sep="$sep ---: |"; done
for b in ${backends//,/ }; do
    header="$header tailq/global $b |"; sep="$sep ---: |"
    [ -n "$bins" ] && { header="$header tailq-b$bins/global $b |"; sep="$sep ---: |"; }
done
echo "$header"
echo "$sep"
for t in ${threads//,/ }; do
    for d in ${depths//,/ }; do
        declare -A rate=() runs=()
        for ((round = 0; round < rounds; round++)); do
            for c in $configs; do
                # shellcheck disable=SC2046 # the MCA arguments are words
                line=$(timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 $(args_of "$c") \
                    $bin --threads "$t" --depth "$d" --iters "$iters" --reps "$reps" 2>&1 | grep '(median' || true)
                r=$(sed -n 's/.*rate=\([0-9]*\).*/\1/p' <<<"$line")
                runs[$c]="${runs[$c]:-} ${r:-failed}"
            done
        done
        for c in $configs; do # the median run; any failed run fails the point
            if [[ ${runs[$c]} == *failed* ]]; then
                rate[$c]=failed
            else
                rate[$c]=$(tr ' ' '\n' <<<"${runs[$c]}" | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
            fi
        done
        row="| $t | $d |"
        for c in $configs; do row="$row ${rate[$c]} |"; done
        for b in ${backends//,/ }; do
            g=${rate[um:$b:global]}
            for q in "${rate[um:$b:tailq]}" ${bins:+"${rate[um:$b:tailq-b$bins]}"}; do
                if [[ $g =~ ^[0-9]+$ && $q =~ ^[0-9]+$ && $g -gt 0 ]]; then
                    row="$row $(awk -v a="$q" -v b="$g" 'BEGIN { printf "%.2f", a / b }') |"
                else
                    row="$row - |"
                fi
            done
        done
        echo "$row"
        unset rate runs
    done
done
echo
echo "after: load $(cut -d' ' -f1-3 /proc/loadavg), CPUs $(um_cpu_idle_pct)% idle, $(date -u '+%F %H:%M UTC')"
