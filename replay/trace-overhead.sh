#!/usr/bin/env bash
# What recording a matching trace costs at depth 0 (issue 17's goal: at most 5%
# of the message rate): queue_bench's posted and unexpected shapes with no
# queued entries, 8-byte windows of 64, 2 ranks, the ubermatch PML with
# pml_ubermatch_trace off and on, alternating in one run (off, on, on, off, ...)
# so that a change of the machine's load hits both alike. Prints each run's
# rates, then per shape the median rate of each and on/off, and the median of
# the rounds' own ratios (on/off of the two runs of one round, side by side in
# time: on a shared machine whose load changes from round to round, the
# steadier figure).
#
#   bash replay/trace-overhead.sh [BUILD_DIR] [--rounds R] [--backend B] [--compare DIR] [--wait-idle S]
#
# --compare DIR: also "other", the trace on with the components in DIR (e.g. an
# older build's mca-components), in the same rounds. --wait-idle S: before each
# run, wait up to S seconds for the CPUs to be 90% idle.
#
# scripts/env.sh sourced. Each queue_bench point: --reps 5 --time 1 (the median
# iteration of each repetition, the median repetition). The trace goes to a
# temporary directory, removed after each run.
set -u
cd "$(dirname "$0")/.."
build=build
rounds=4
backend=auto
compare=
wait_idle=0
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --compare) compare=$2; shift 2 ;;
    --wait-idle) wait_idle=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "trace-overhead.sh: unknown argument '$1' (valid: BUILD_DIR, --rounds R, --backend B, --compare DIR, --wait-idle S)" >&2; exit 2 ;;
    *) build=$1; shift ;;
    esac
done
. bench/mpi/common.sh
bench=$build/bench/mpi/queue_bench
[ -x "$bench" ] || { echo "trace-overhead.sh: $bench not built (make -C $build)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() { # off|on|other -> "posted_rate unexpected_rate"
    local trace=() out path=$OMPI_MCA_mca_base_component_path
    [ "$1" != off ] && trace=(--mca pml_ubermatch_trace "$tmp/trace")
    [ "$1" = other ] && path="${path%:*}:$compare"
    out=$(OMPI_MCA_mca_base_component_path=$path timeout -k 5 120 "${MPIRUN:-mpirun}" --allow-run-as-root --oversubscribe --bind-to none -np 2 \
        --mca pml ubermatch --mca pml_ubermatch_backend "$backend" "${trace[@]}" \
        "$bench" --points posted:0,unexpected:0 --reps 5 --time 1 2>&1 </dev/null)
    rm -rf "$tmp/trace"
    local p u
    p=$(sed -n 's/^shape=posted .* value=\([0-9.]*\) .*/\1/p' <<<"$out")
    u=$(sed -n 's/^shape=unexpected .* value=\([0-9.]*\) .*/\1/p' <<<"$out")
    if [ -z "$p" ] || [ -z "$u" ]; then
        echo "trace-overhead.sh: queue_bench failed (trace $1):" >&2
        tail -n 5 <<<"$out" >&2
        exit 1
    fi
    echo "$p $u"
}

echo "# $(um_machine)"
echo "# backend $backend, queue_bench --points posted:0,unexpected:0 --reps 5 --time 1, np 2"
echo "# load before: $(cat /proc/loadavg), CPUs idle $(um_cpu_idle_pct)%"
printf "%-6s %-5s %14s %14s\n" round trace posted_msg/s unexpected_msg/s
declare -A rates
configs="off on"
[ -n "$compare" ] && configs="off on other"
for ((r = 1; r <= rounds; r++)); do
    order=$configs
    [ $((r % 2)) -eq 0 ] && order=$(tr ' ' '\n' <<<"$configs" | tac | tr '\n' ' ')
    for t in $order; do
        [ "$wait_idle" -gt 0 ] && um_wait_idle "$wait_idle" >/dev/null
        read -r p u < <(run "$t") || exit 1
        [ -n "$p" ] || exit 1
        printf "%-6s %-5s %14.0f %14.0f\n" "$r" "$t" "$p" "$u"
        rates[$t.posted]+=" $p"
        rates[$t.unexpected]+=" $u"
        rates[$t.posted.$r]=$p
        rates[$t.unexpected.$r]=$u
    done
done
echo "# load after: $(cat /proc/loadavg), CPUs idle $(um_cpu_idle_pct)%"
# The median of a configuration's runs, leaving out disturbed runs: stalled ones
# (below a tenth of the best run of any configuration of that shape: on this
# shared machine a run now and then sits at ~4000 msg/s, one iteration per
# scheduler tick, with or without the trace) and slowed ones (below 0.6 of the
# best run of the same configuration: now and then a run goes at half speed; the
# trace costs well under 40%). They are counted on stderr.
floor_of() { # the least rate kept: best of this configuration, best of all
    awk -v own="$1" -v all="$2" 'BEGIN { f = 0.6 * own; if (all / 10 > f) f = all / 10; print f }'
}
best_of() { printf "%s\n" "$@" | sort -g | tail -n1; }
median() { # floor, rates...
    local floor=$1
    shift
    printf "%s\n" "$@" | sort -g | awk -v f="$floor" '$1 >= f { v[++n] = $1 } $1 < f { s++ }
        END { if (s) printf "(%d disturbed run(s) left out) ", s > "/dev/stderr"; print n ? ((n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) : 0 }'
}
for shape in posted unexpected; do
    # shellcheck disable=SC2086
    best=$(best_of ${rates[off.$shape]} ${rates[on.$shape]} ${rates[other.$shape]:-})
    # shellcheck disable=SC2086
    floor_off=$(floor_of "$(best_of ${rates[off.$shape]})" "$best")
    # shellcheck disable=SC2086
    a=$(median "$floor_off" ${rates[off.$shape]})
    for t in $configs; do
        [ "$t" = off ] && continue
        # shellcheck disable=SC2086
        floor_t=$(floor_of "$(best_of ${rates[$t.$shape]})" "$best")
        # shellcheck disable=SC2086
        b=$(median "$floor_t" ${rates[$t.$shape]})
        awk -v s=$shape -v t="$t" -v a="$a" -v b="$b" 'BEGIN { if (a == 0 || b == 0) printf "%-10s %s/off: no undisturbed run of %s\n", s, t, a == 0 ? "off" : t
            else printf "%-10s median off %.0f msg/s, %s %.0f msg/s, %s/off %.3f (cost %.1f%%)\n", s, a, t, b, t, b / a, 100 * (1 - b / a) }'
        # The rounds where neither run was disturbed: their own ratios, the median.
        for ((r = 1; r <= rounds; r++)); do
            echo "${rates[off.$shape.$r]} ${rates[$t.$shape.$r]}"
        done | awk -v fa="$floor_off" -v fb="$floor_t" -v s=$shape -v t="$t" '$1 >= fa && $2 >= fb { v[++n] = $2 / $1 }
            END { if (!n) { printf "%-10s %s/off per round: no round without a disturbed run\n", s, t; exit }
                  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
                  m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
                  printf "%-10s %s/off per round: median %.3f (cost %.1f%%) of %d rounds, range %.3f - %.3f\n", s, t, m, 100 * (1 - m), n, v[1], v[n] }'
    done
done
