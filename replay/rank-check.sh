#!/usr/bin/env bash
# Does the replay's recommendation hold? (issue 17's third goal: for each proxy,
# the backend ubermatch-replay ranks first is within 10% of the best measured by
# running the proxy under every backend.) For each proxy in examples/proxies:
# record a trace of a small run, replay it through every full-matching backend
# (--no-sweep), then run the proxy itself under each of those backends --reps
# times (the backends in a rotated order each round, so a change of load falls
# on all of them) and rank them by the median of the proxy's own time (rank
# 0's "seconds", MPI_Init left out). Prints the two rankings side by side and,
# per proxy, the real time of the replay's first against the real best (by the
# median and by each backend's fastest run), the same for the engine's time
# inside the runs, and Spearman's rho between the replay's ranking and each of
# the two.
#
#   bash replay/rank-check.sh [BUILD_DIR] [--reps R] [--np N] [--proxies "fds radix ..."] [--scale K]
#
# --scale K runs every proxy K times as many iterations (recorded and real
# runs): the default sizes take ~0.1 s on 2 busy cores but 5-30 ms on 2 idle
# ones, too short for wall times to tell backends 10% apart.
#
# scripts/env.sh sourced. The real runs have pml_ubermatch_timers on, so that
# the same runs also give the engine's own search time in the run ("engine ms":
# searches and restructuring on MPI_COMM_WORLD, all ranks summed, from --stats);
# the clock reads it costs fall on every backend alike.
set -u
cd "$(dirname "$0")/.."
build=build
reps=3
np=4
proxies="radix nbody miniamr fds"
scale=1
while [ $# -gt 0 ]; do
    case $1 in
    --reps) reps=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --proxies) proxies=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "rank-check.sh: unknown argument '$1' (valid: BUILD_DIR, --reps R, --np N, --proxies LIST, --scale K)" >&2; exit 2 ;;
    *) build=$1; shift ;;
    esac
done
case $scale in '' | *[!0-9]* | 0) echo "rank-check.sh: --scale takes a whole number >= 1, not '$scale'" >&2; exit 2 ;; esac
replay=$build/replay/ubermatch-replay
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

args_of() { # the proxy's size: about 0.1 s of work at np 4 on 2 busy cores (--scale 1)
    case $1 in
    radix) echo "--size 20000 --iters $((10 * scale))" ;;
    nbody) echo "--size 256 --iters $((10 * scale))" ;;
    miniamr) echo "--size 16 --iters $((200 * scale))" ;;
    fds) echo "--size 64 --iters $((1000 * scale))" ;;
    *) echo "rank-check.sh: unknown proxy '$1' (valid: radix nbody miniamr fds)" >&2; exit 2 ;;
    esac
}
mpi() { # backend, proxy, the proxy's extra options ("" or --stats), mpirun's extra args... -> the output
    local backend=$1 proxy=$2 opts=$3
    shift 3
    # shellcheck disable=SC2046,SC2086
    timeout -k 5 120 "${MPIRUN:-mpirun}" --allow-run-as-root --oversubscribe -np "$np" --mca pml ubermatch \
        --mca pml_ubermatch_backend "$backend" "$@" "$build/examples/proxies/$proxy" $(args_of "$proxy") $opts \
        2>&1 </dev/null
}

median() { awk '{ v[NR] = $1 } END { m = int((NR + 1) / 2); h = int((NR + 2) / 2); print (v[m] + v[h]) / 2 }'; } # sorted input

echo "# rank-check: np $np, $reps real runs per backend, scale $scale, load before $(cat /proc/loadavg)"
start=$SECONDS
verdicts=()
for proxy in $proxies; do
    args_of "$proxy" >/dev/null || exit 2
    # 1. Record (with auto) and 2. replay through every full-matching backend.
    mpi auto "$proxy" "" --mca pml_ubermatch_trace "$tmp/$proxy" >"$tmp/$proxy.rec" ||
        { echo "rank-check.sh: recording $proxy failed:"; tail -n 5 "$tmp/$proxy.rec"; exit 1; }
    "$replay" "$tmp/$proxy" --no-sweep >"$tmp/$proxy.replay" 2>&1 ||
        { echo "rank-check.sh: replay of $proxy failed:"; tail -n 5 "$tmp/$proxy.replay"; exit 1; }
    # Rows "rank backend default mismatch inspected/op deepest ns/op ...", in rank order.
    awk '$1 ~ /^[0-9]+$/ && $3 == "default" { print $2, $7 }' "$tmp/$proxy.replay" >"$tmp/$proxy.rank-replay"
    mapfile -t backends < <(cut -d' ' -f1 "$tmp/$proxy.rank-replay")
    # 3. Real runs, rotated order each round.
    : >"$tmp/$proxy.runs"
    n=${#backends[@]}
    for ((r = 0; r < reps; r++)); do
        for ((i = 0; i < n; i++)); do
            b=${backends[$(((i + r * 5) % n))]}
            out=$(mpi "$b" "$proxy" --stats --mca pml_ubermatch_timers 1)
            s=$(sed -n "s/^PASS $proxy np $np .* seconds \([0-9.]*\) .*/\1/p" <<<"$out")
            [ -n "$s" ] || { echo "rank-check.sh: $proxy under $b failed:"; tail -n 5 <<<"$out"; exit 1; }
            ns=$(awk '/^STATS / { for (i = 2; i <= NF; i++) { split($i, kv, "=");
                      if (kv[1] == "p2p_search_ns" || kv[1] == "coll_search_ns" || kv[1] == "overhead_ns") t += kv[2] } }
                      END { print t + 0 }' <<<"$out")
            echo "$b $s $ns" >>"$tmp/$proxy.runs"
        done
    done
    # Median wall time (and engine time) per backend, best first.
    for b in "${backends[@]}"; do
        e=$(awk -v b="$b" '$1 == b { print $3 }' "$tmp/$proxy.runs" | sort -g | median)
        awk -v b="$b" '$1 == b { print $2 }' "$tmp/$proxy.runs" | sort -g |
            awk -v b="$b" -v e="$e" '{ w[NR] = $1 } END { m = int((NR + 1) / 2); h = int((NR + 2) / 2)
                printf "%s %.4f %.4f %.4f %.2f\n", b, (w[m] + w[h]) / 2, w[1], w[NR], e / 1e6 }'
    done | sort -k2,2g >"$tmp/$proxy.rank-real"
    events=$(sed -n 's/^trace .*: \([0-9]*\) ranks, \([0-9]*\) events.*/\2/p' "$tmp/$proxy.replay")
    echo
    echo "== $proxy, np $np, $(args_of "$proxy"): $events events recorded; real runs: median of $reps"
    printf "%-3s | %-10s %8s | %-10s %8s %17s %10s\n" "#" "replay" "ns/op" "real" "wall s" "(min - max)" "engine ms"
    paste -d' ' "$tmp/$proxy.rank-replay" "$tmp/$proxy.rank-real" |
        awk '{ printf "%-3d | %-10s %8.1f | %-10s %8.4f (%7.4f - %7.4f) %10.2f\n", NR, $1, $2, $3, $4, $5, $6, $7 }'
    first=$(head -n1 "$tmp/$proxy.rank-replay" | cut -d' ' -f1)
    verdict=$(awk -v first="$first" -v proxy="$proxy" 'NR == 1 { best = $1; bt = $2 } $1 == first { ft = $2; rk = NR }
        END { r = ft / bt; printf "%s: replay first %s: real %.4f s, %s of %d in the real ranking, %.3fx the real best (%s %.4f s): %s",
              proxy, first, ft, rk, NR, r, best, bt, (r <= 1.10) ? "within 10%" : "NOT within 10%" }' "$tmp/$proxy.rank-real")
    # The same by each backend's fastest run: on a shared machine the load only
    # adds time, so the least of R runs is the steadier estimate of a backend's own.
    verdict+=$(sort -k3,3g "$tmp/$proxy.rank-real" | awk -v first="$first" 'NR == 1 { best = $1; bt = $3 } $1 == first { ft = $3; rk = NR }
        END { r = ft / bt; printf "; by the fastest run: %.4f s, %s of %d, %.3fx the best (%s %.4f s): %s",
              ft, rk, NR, r, best, bt, (r <= 1.10) ? "within 10%" : "NOT within 10%" }')
    # The engine's own time in the same runs, ranked, and how far each real
    # ranking follows the replay's: Spearman's rho over the backends.
    sort -k5,5g "$tmp/$proxy.rank-real" >"$tmp/$proxy.rank-engine"
    verdict+=$(awk -v first="$first" 'NR == 1 { best = $1; be = $5 } $1 == first { fe = $5; rk = NR }
        END { printf "; in-run engine time: %s %.2f ms, %s of %d, %.2fx the least (%s %.2f ms)", first, fe, rk, NR, fe / be, best, be }' \
        "$tmp/$proxy.rank-engine")
    for what in real engine; do
        verdict+=$(awk -v what="$what" 'FNR == 1 { f++ } f == 1 { r1[$1] = FNR } f == 2 { d = r1[$1] - FNR; s += d * d; n++ }
            END { printf "; rho(replay, %s) %+.2f", what == "real" ? "wall" : "engine", 1 - 6 * s / (n * (n * n - 1)) }' \
            "$tmp/$proxy.rank-replay" "$tmp/$proxy.rank-$what")
    done
    echo "$verdict"
    verdicts+=("$verdict")
done
echo
echo "# summary ($((SECONDS - start)) s, load after $(cat /proc/loadavg))"
printf "%s\n" "${verdicts[@]}"
