#!/usr/bin/env bash
# What recording a matching trace costs (issue 17's goals: at most 5% of the
# message rate at depth 0, at most 2% on the proxies). By default queue_bench's
# posted and unexpected shapes with no queued entries, 8-byte windows of 64, 2
# ranks; with --proxies, the proxy applications' own times instead (each
# proxy's "seconds", as runs per second, np 2, sizes of about 0.2-0.3 s here).
# The ubermatch PML with pml_ubermatch_trace off and on, alternating in one run
# (off, on, on, off, ...) so that a change of the machine's load hits both
# alike. Prints each run's rates, then per shape (or proxy) the median rate of
# each and on/off, and the median of the rounds' own ratios (on/off of the two
# runs of one round, side by side in time: on a shared machine whose load
# changes from round to round, the steadier figure). With --proxies it also
# prints the events each proxy recorded and their rate (events per second of
# its run, both ranks together): the recording's cost follows that rate.
#
#   bash replay/trace-overhead.sh [BUILD_DIR] [--rounds R] [--backend B] [--compare DIR] [--wait-idle S]
#                                 [--compare-mca "ARGS"] [--proxies "radix nbody miniamr fds"] [--scale K]
#
# --compare DIR: also "other", the trace on with the components in DIR (e.g. an
# older build's mca-components), in the same rounds. --compare-mca ARGS: also
# "other", the trace on with these mpirun arguments added (e.g. "--mca
# pml_ubermatch_trace_direct false"). --wait-idle S: before each
# run, wait up to S seconds for the CPUs to be 90% idle. --scale K: the
# proxies' iterations times K (a whole number; longer runs, whose fixed costs
# and run-to-run noise weigh less).
#
# With scripts/env.sh sourced the build's components run (else those installed
# in Open MPI's directory; --compare needs env.sh). Each queue_bench point: --reps 5 --time 1, its mean
# rate (all of a repetition's messages over all its time, the median
# repetition): the iterations in which a full trace buffer goes to the file are
# few, so the median iteration, queue_bench's value, would leave that cost out.
# The trace goes to a temporary directory, removed after each run.
set -u
cd "$(dirname "$0")/.."
build=build
rounds=4
backend=auto
compare=
compare_mca=
wait_idle=0
proxies=
scale=1
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --compare) compare=$2; shift 2 ;;
    --compare-mca) compare_mca=$2; shift 2 ;;
    --wait-idle) wait_idle=$2; shift 2 ;;
    --proxies) proxies=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "trace-overhead.sh: unknown argument '$1' (valid: BUILD_DIR, --rounds R, --backend B, --compare DIR, --compare-mca ARGS, --wait-idle S, --proxies LIST, --scale K)" >&2; exit 2 ;;
    *) build=$1; shift ;;
    esac
done
case $scale in
'' | *[!0-9]* | 0) echo "trace-overhead.sh: --scale '$scale' is not a whole number from 1" >&2; exit 2 ;;
esac
. bench/mpi/common.sh
bench=$build/bench/mpi/queue_bench
# The components: scripts/env.sh's path (the build's), else Open MPI's own
# directory (installed there). --compare swaps the path's last directory (the
# build's components) for DIR: without env.sh's path there is none to swap.
if [ -n "$compare" ] && [ -z "${OMPI_MCA_mca_base_component_path:-}" ]; then
    echo "trace-overhead.sh: --compare needs scripts/env.sh sourced first (. scripts/env.sh)" >&2
    exit 2
fi
components=${OMPI_MCA_mca_base_component_path:-$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')}
[ -x "$bench" ] || { echo "trace-overhead.sh: $bench not built (make -C $build)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

shapes="posted unexpected"
[ -n "$proxies" ] && shapes=$proxies
proxy_args() { # the proxy's size: about 0.2-0.3 s at np 2 on this 2-core machine (times --scale)
    case $1 in
    radix) echo "--size 200000 --iters $((20 * scale))" ;;
    nbody) echo "--size 1024 --iters $((10 * scale))" ;;
    miniamr) echo "--size 16 --iters $((2000 * scale))" ;;
    fds) echo "--size 64 --iters $((5000 * scale))" ;;
    *) echo "trace-overhead.sh: unknown proxy '$1' (valid: radix nbody miniamr fds)" >&2; return 2 ;;
    esac
}
for p in $proxies; do
    proxy_args "$p" >/dev/null || exit 2
    [ -x "$build/examples/proxies/$p" ] || { echo "trace-overhead.sh: $build/examples/proxies/$p not built" >&2; exit 2; }
done

mpi() { # off|on|other, program and arguments -> its output; the trace, when on, left in $tmp/trace
    local trace=() path=$components t=$1
    shift
    [ "$t" != off ] && trace=(--mca pml_ubermatch_trace "$tmp/trace")
    [ "$t" = other ] && [ -n "$compare" ] && path="${path%:*}:$compare"
    # shellcheck disable=SC2206
    [ "$t" = other ] && trace+=($compare_mca)
    OMPI_MCA_mca_base_component_path=$path timeout -k 5 120 "${MPIRUN:-mpirun}" --allow-run-as-root --oversubscribe --bind-to none -np 2 \
        --mca pml ubermatch --mca pml_ubermatch_backend "$backend" "${trace[@]}" "$@" 2>&1 </dev/null
}

run() { # off|on|other -> one rate per shape, in the order of $shapes
    local out got=() v
    if [ -n "$proxies" ]; then
        for p in $proxies; do
            # shellcheck disable=SC2046
            out=$(mpi "$1" "$build/examples/proxies/$p" $(proxy_args "$p"))
            v=$(sed -n 's/^PASS .* seconds \([0-9.]*\) .*/\1/p' <<<"$out")
            if [ -z "$v" ] || [ "$(awk -v s="$v" 'BEGIN { print (s > 0) }')" != 1 ]; then
                echo "trace-overhead.sh: $p failed (trace $1):" >&2
                tail -n 5 <<<"$out" >&2
                exit 1
            fi
            if [ "$1" = on ]; then # what the run recorded (the files' 16-byte records), kept past this subshell
                echo "$(cat "$tmp"/trace/* 2>/dev/null | wc -c | awk '{ print int($1 / 16) }') $v" >"$tmp/events.$p"
            fi
            rm -rf "$tmp/trace"
            got+=("$(awk -v s="$v" 'BEGIN { printf "%.4f", 1 / s }')")
        done
    else
        out=$(mpi "$1" "$bench" --points posted:0,unexpected:0 --reps 5 --time 1)
        rm -rf "$tmp/trace"
        for shape in posted unexpected; do
            v=$(sed -n "s/^shape=$shape .* mean=\([0-9.]*\) .*/\1/p" <<<"$out")
            if [ -z "$v" ]; then
                echo "trace-overhead.sh: queue_bench failed (trace $1):" >&2
                tail -n 5 <<<"$out" >&2
                exit 1
            fi
            got+=("$v")
        done
    fi
    echo "${got[*]}"
}

echo "# $(um_machine)"
if [ -n "$proxies" ]; then
    echo "# backend $backend, the proxies' runs per second (1 / rank 0's seconds), np 2:$(for p in $proxies; do printf ' %s %s;' "$p" "$(proxy_args "$p")"; done)"
else
    echo "# backend $backend, queue_bench --points posted:0,unexpected:0 --reps 5 --time 1, np 2 (mean rates, msg/s)"
fi
echo "# load before: $(cat /proc/loadavg), CPUs idle $(um_cpu_idle_pct)%"
printf "%-6s %-5s" round trace
for shape in $shapes; do printf " %14s" "$shape"; done
echo
declare -A rates
configs="off on"
[ -n "$compare$compare_mca" ] && configs="off on other"
for ((r = 1; r <= rounds; r++)); do
    order=$configs
    [ $((r % 2)) -eq 0 ] && order=$(tr ' ' '\n' <<<"$configs" | tac | tr '\n' ' ')
    for t in $order; do
        [ "$wait_idle" -gt 0 ] && um_wait_idle "$wait_idle" >/dev/null
        line=$(run "$t") || exit 1
        read -r -a vals <<<"$line"
        [ -n "${vals[0]:-}" ] || exit 1
        printf "%-6s %-5s" "$r" "$t"
        i=0
        for shape in $shapes; do
            printf " %14s" "${vals[$i]}"
            rates[$t.$shape]+=" ${vals[$i]}"
            rates[$t.$shape.$r]=${vals[$i]}
            i=$((i + 1))
        done
        echo
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
unit=msg/s
[ -n "$proxies" ] && unit=runs/s
for shape in $shapes; do
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
        awk -v s="$shape" -v t="$t" -v a="$a" -v b="$b" -v u="$unit" 'BEGIN { if (a == 0 || b == 0) printf "%-10s %s/off: no undisturbed run of %s\n", s, t, a == 0 ? "off" : t
            else printf "%-10s median off %.6g %s, %s %.6g %s, %s/off %.3f (cost %.1f%%)\n", s, a, u, t, b, u, t, b / a, 100 * (1 - b / a) }'
        # The rounds where neither run was disturbed: their own ratios, the median.
        for ((r = 1; r <= rounds; r++)); do
            echo "${rates[off.$shape.$r]} ${rates[$t.$shape.$r]}"
        done | awk -v fa="$floor_off" -v fb="$floor_t" -v s="$shape" -v t="$t" '$1 >= fa && $2 >= fb { v[++n] = $2 / $1 }
            END { if (!n) { printf "%-10s %s/off per round: no round without a disturbed run\n", s, t; exit }
                  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
                  m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
                  printf "%-10s %s/off per round: median %.3f (cost %.1f%%) of %d rounds, range %.3f - %.3f\n", s, t, m, 100 * (1 - m), n, v[1], v[n] }'
    done
done
for p in $proxies; do
    read -r n sec <"$tmp/events.$p"
    awk -v p="$p" -v n="$n" -v sec="$sec" 'BEGIN {
        printf "%-10s recorded %d events in a run of %.3f s (the last with the trace on): %.3g events/s\n", p, n, sec, (sec > 0 ? n / sec : 0) }'
done
