#!/usr/bin/env bash
# The measurements of Ghazimirsaeed et al. (ParCo 2019, section 5) in
# miniature, on the proxy applications of examples/proxies: each proxy at each
# rank count with each backend, the engine's own timers on, the statistics of
# every rank read through MPI_T (--stats); then figures.py writes the tables
# and gnuplot PNGs into docs/seed000/ (see docs/seed000.md).
#
#   bash bench/seed000/run-paper-figures.sh [--nps "16 32 64"] [--reps 3]
#        [--backends "list colpnp col+list list+pnp perpeer"] [--proxies "radix nbody miniamr fds"]
#        [--out docs/seed000] [--quick]
#
# --quick: np 4 and 8, one repetition, into /tmp/seed000-quick (a check of the
# script, not a measurement). The runs of one (proxy, np) go through the
# backends in turn, repetition after repetition, so that a change in the
# machine's load touches every backend alike. The component and the proxies
# are copied first, so that a rebuild during the runs cannot pull them away
# from under running processes. Extra mpirun arguments: UM_FIG_MPIRUN_ARGS.
# Raw data: OUT/stats.txt.gz (every STATS line, with the backend and
# repetition in front), OUT/runs.txt (one line per run: wall time and the PASS
# line). Tables and PNGs again from the raw data alone:
#   python3 bench/seed000/figures.py docs/seed000/stats.txt.gz docs/seed000
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$(pwd)

nps="16 32 64"
reps=3
backends="list colpnp col+list list+pnp perpeer"
proxies="radix nbody miniamr fds"
out=docs/seed000
while [ $# -gt 0 ]; do
    case $1 in
    --nps) nps=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --backends) backends=$2; shift 2 ;;
    --proxies) proxies=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quick) nps="4 8"; reps=1; out=/tmp/seed000-quick; shift ;;
    -h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

# Sizes: small enough for np 64 on 2 cores (the whole script in about 10 minutes).
args_of() {
    case $1 in
    radix) echo "--size 2048 --iters 3" ;;
    nbody) echo "--size 256 --iters 10" ;;
    miniamr) echo "--size 8 --iters 10" ;;
    fds) echo "--size 8 --iters 10" ;;
    esac
}

bash scripts/build.sh >/dev/null
snap=$(mktemp -d /tmp/seed000-run.XXXXXX)
trap 'rm -rf "$snap"' EXIT
cp build/mca-components/*.so "$snap/"
for p in $proxies; do
    cp "build/examples/proxies/$p" "$snap/"
done
. scripts/env.sh
sysdir=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')
export OMPI_MCA_mca_base_component_path="$sysdir:$snap"

mkdir -p "$out"
stats="$out/stats.txt"
runs="$out/runs.txt"
{
    echo "# bash bench/seed000/run-paper-figures.sh --nps \"$nps\" --reps $reps --backends \"$backends\" --proxies \"$proxies\" --out $out"
    echo "# $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- matching ompi examples/proxies || echo ' (with local changes)'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
    echo "# components: $(cd "$snap" && ls *.so | tr '\n' ' ')"
    echo "# mpirun -np NP --mca pml ubermatch --mca pml_ubermatch_backend B --mca pml_ubermatch_timers 1 --mca pml_ubermatch_timer_cutoff_ns 1000000 ${UM_FIG_MPIRUN_ARGS:-} PROXY ARGS --stats"
} | tee "$runs" >"$stats"

start=$SECONDS
for rep in $(seq 1 "$reps"); do
    for p in $proxies; do
        for np in $nps; do
            for b in $backends; do
                log="$snap/log"
                t0=$(date +%s.%N)
                # shellcheck disable=SC2046,SC2086
                if ! timeout -k 10 300 mpirun -np "$np" --mca pml ubermatch \
                    --mca pml_ubermatch_backend "$b" --mca pml_ubermatch_timers 1 \
                    --mca pml_ubermatch_timer_cutoff_ns 1000000 ${UM_FIG_MPIRUN_ARGS:-} \
                    "$snap/$p" $(args_of "$p") --stats >"$log" 2>&1 </dev/null; then
                    echo "run failed: $p np $np backend $b (repetition $rep)" >&2
                    tail -n 20 "$log" >&2
                    exit 1
                fi
                wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
                grep "^STATS proxy=" "$log" | sed "s/^STATS /STATS backend=$b rep=$rep /" >>"$stats"
                echo "rep $rep backend $b wall $wall $(grep '^PASS' "$log")" | tee -a "$runs"
            done
        done
    done
done
echo "runs: $((SECONDS - start)) s" | tee -a "$runs"
gzip -9 -f "$stats"
python3 bench/seed000/figures.py "$stats.gz" "$out" | tee "$out/fds-summary.txt"
