#!/usr/bin/env bash
# The message path from one run: latency (ping-pong), message rate (windows of
# 64) and bandwidth at every power of two from 1 B to 4 MiB, for ob1, pml_ucx,
# ubermatch `auto` and `list`, beside UCX's own floor (ucx_perftest: UCP
# active messages, what ubermatch sends, and UCP tag matching, what pml_ucx
# sends). The successor of compare-pmls.sh for issue 12. um-ucx is ubermatch
# auto with its shared-memory rings off (pml_ubermatch_shm_eager_limit 0): the
# path through UCX alone. `backends` measures the 8 B rate (depth 0) of every
# full-matching backend.
#
#   bash bench/mpi/message-path.sh [--out DIR] [--quick] [--wait-idle S] [--configs "..."]
#
#   --out DIR      CSV, markdown and one PNG per measure into DIR (default docs/perf)
#   --quick        sizes 1, 8, 64, 4K, 64K, 1M only, shorter timing (about 1 minute)
#   --wait-idle S  before each run, wait up to S s for the CPUs to be >= 90% idle
#   --configs ".." a subset of: ob1 ucx um-auto um-list um-ucx am-floor tag-floor backends
#   --launches N   launch every configuration N times, round robin (default 3)
# Every mpirun: 2 ranks, one per core (--bind-to core: unbound, ranks that the
# scheduler moves made the same PML 3x slower in one launch out of two); p2p_bench (built here
# into build/bench-mpi) times each size for about --time seconds over 3
# repetitions and reports the median. The tables keep each point's best launch
# and say how far the worst fell: on these virtual machines launches still
# differ (the host places the two virtual CPUs), so one launch per
# configuration would compare draws, not PMLs. Ratios: ubermatch auto over the better stock PML at each size
# (above 1 is better for rate and bandwidth, worse for latency). Progress goes
# to stderr, one line per run with the CPUs' idle share.
set -u
cd "$(dirname "$0")/../.."
top=$(pwd)
out=docs/perf
quick=0
wait_idle=0
launches=3
configs="ob1 ucx um-auto um-list um-ucx am-floor tag-floor backends"
while [ $# -gt 0 ]; do
    case $1 in
    --out) out=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --wait-idle) wait_idle=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --launches) launches=$2; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "message-path.sh: unknown argument '$1' (valid: --out, --quick, --wait-idle, --configs, --launches)" >&2; exit 2 ;;
    esac
done
case $launches in '' | *[!0-9]* | 0) echo "message-path.sh: --launches takes a count >= 1, not '$launches'" >&2; exit 2 ;; esac
for c in $configs; do
    case $c in ob1 | ucx | um-auto | um-list | um-ucx | am-floor | tag-floor | backends) ;;
    *) echo "message-path.sh: unknown configuration '$c' (valid: ob1 ucx um-auto um-list um-ucx am-floor tag-floor backends)" >&2; exit 2 ;;
    esac
done

if [ $quick = 1 ]; then
    sizes="1 8 64 4096 65536 1048576"
    time_s=0.15
else
    sizes=""
    for ((s = 1; s <= 4194304; s *= 2)); do sizes="$sizes $s"; done
    time_s=0.4
fi
size_list=$(echo $sizes | tr ' ' ',')

. scripts/env.sh
bin=build/bench-mpi/p2p_bench
mkdir -p build/bench-mpi "$out" || exit 2
mpicc -O2 -Wall -Wextra -Werror -o "$bin" bench/mpi/p2p_bench.c || { echo "message-path.sh: cannot build p2p_bench" >&2; exit 2; }

. bench/mpi/common.sh # um_pml_args, um_wait_idle: the configurations and idle wait of the other benchmarks
min_idle=100
idle=100
settle() { # waits for idle CPUs (up to --wait-idle s); sets idle, records the least
    idle=$(um_wait_idle "$wait_idle")
    [ "$idle" -lt "$min_idle" ] && min_idle=$idle
}

# Our configuration names, in um_pml_args's terms.
pml_args() {
    case $1 in
    um-auto) um_pml_args ubermatch:auto ;;
    um-list) um_pml_args ubermatch:list ;;
    um-ucx) echo "$(um_pml_args ubermatch:auto) --mca pml_ubermatch_shm_eager_limit 0" ;;
    *) um_pml_args "$1" ;;
    esac
}

csv=$out/message-path.csv
echo "config,measure,size,value" >"$csv"
start=$SECONDS
for ((launch = 1; launch <= launches; launch++)); do
echo "[$((SECONDS - start)) s] launch $launch of $launches" >&2
for c in $configs; do
    if [ "$c" = backends ]; then
        for b in $(build/examples/engine_demo --list-backends); do
            settle
            # shellcheck disable=SC2046 # the PML's arguments are words
            cmd=(mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core $(um_pml_args "ubermatch:$b")
                "$bin" --reps 3 --time "$time_s" rate 8)
            echo "[$((SECONDS - start)) s] backend $b, 8 B rate: ${cmd[*]}, CPUs ${idle}% idle" >&2
            timeout 300 "${cmd[@]}" 2>/dev/null | awk -v c="backend:$b" -F'[ =]' '/^mode=/ { printf "%s,%s,%s,%s\n", c, $2, $4, $6 }' >>"$csv"
        done
        continue
    fi
    for m in latency rate bw; do
        settle
        case $c in
        am-floor | tag-floor)
            [ $m = rate ] && continue # the bw run gives both
            command -v ucx_perftest >/dev/null || { echo "  $c: ucx_perftest missing (apt-get install ucx-utils)" >&2; continue; }
            prefix=ucp_am
            [ $c = tag-floor ] && prefix=tag
            test=${prefix}_$([ $m = latency ] && echo lat || echo bw)
            echo "[$((SECONDS - start)) s] $c $m: ucx_perftest -t $test, CPUs ${idle}% idle" >&2
            for s in $sizes; do
                n=$((2000000000 / (s + 64)))
                [ $n -gt 200000 ] && n=200000
                [ $n -lt 500 ] && n=500
                [ $quick = 1 ] && n=$((n / 4 + 100))
                port=$((14000 + RANDOM % 1000))
                ucx_perftest -t "$test" -s "$s" -n "$n" -p "$port" >/dev/null 2>&1 &
                server=$!
                sleep 0.3
                line=$(timeout 60 ucx_perftest 127.0.0.1 -t "$test" -s "$s" -n "$n" -p "$port" -f 2>/dev/null | tail -1)
                wait "$server" 2>/dev/null
                # iterations, latency 50%, average, overall, bandwidth average, overall (MiB/s), rate average, overall
                read -r _ _ _ lat _ bw _ rate <<<"$line"
                [ -n "${rate:-}" ] || { echo "  $c $test $s B: no result" >&2; continue; }
                if [ $m = latency ]; then
                    echo "$c,latency,$s,$lat" >>"$csv"
                else
                    echo "$c,rate,$s,$rate" >>"$csv"
                    awk -v c="$c" -v s="$s" -v b="$bw" 'BEGIN { printf "%s,bw,%s,%.1f\n", c, s, b * 1.048576 }' >>"$csv"
                fi
            done
            ;;
        *)
            # shellcheck disable=SC2046 # the PML's arguments are words
            cmd=(mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core $(pml_args "$c") "$bin"
                --reps 3 --time "$time_s" "$m" "$size_list")
            echo "[$((SECONDS - start)) s] $c $m: ${cmd[*]}, CPUs ${idle}% idle" >&2
            timeout 600 "${cmd[@]}" 2>/dev/null | awk -v c="$c" -F'[ =]' '/^mode=/ { printf "%s,%s,%s,%s\n", c, $2, $4, $6 }' >>"$csv"
            ;;
        esac
    done
done
done
echo "[$((SECONDS - start)) s] done, CPUs at least ${min_idle}% idle before each run" >&2

# The table: one section per measure, the ratio of ubermatch auto to the better stock PML.
python3 - "$csv" "$out/message-path.md" "$min_idle" "$launches" <<'EOF'
import csv, sys
from collections import defaultdict
rows = list(csv.DictReader(open(sys.argv[1])))
runs = defaultdict(lambda: defaultdict(list))
for r in rows:
    runs[(r['config'], r['measure'])][int(r['size'])].append(float(r['value']))
# Each point's best launch (see the header), and the worst one's distance from it.
best = lambda m, xs: min(xs) if m == 'latency' else max(xs)
v = defaultdict(dict)
worst_gap = defaultdict(float)
for (c, m), d in runs.items():
    for s, xs in d.items():
        v[(c, m)][s] = best(m, xs)
        gap = max(xs) / min(xs) if min(xs) > 0 else 1
        worst_gap[c] = max(worst_gap[c], gap)
configs = [c for c in ['ob1', 'ucx', 'um-auto', 'um-list', 'um-ucx', 'am-floor', 'tag-floor'] if any(k[0] == c for k in v)]
units = {'latency': 'us, one-way, lower is better', 'rate': 'msg/s, window of 64', 'bw': 'MB/s, window of 64'}
def fmt(x, m):
    if x is None: return 'n/a'
    if m == 'latency': return f'{x:.3f}'
    if x >= 1e5: return f'{x / 1e6:.2f} M'
    return f'{x:.0f}'
out = []
for m in ['latency', 'rate', 'bw']:
    sizes = sorted({s for (c, mm), d in v.items() if mm == m for s in d})
    if not sizes: continue
    out.append(f'### {m} ({units[m]})\n')
    out.append('| size | ' + ' | '.join(configs) + ' | auto / best stock |')
    out.append('| ---: |' + ' ---: |' * (len(configs) + 1))
    for s in sizes:
        cells = [fmt(v[(c, m)].get(s), m) for c in configs]
        stock = [v[(c, m)].get(s) for c in ['ob1', 'ucx'] if v[(c, m)].get(s)]
        um = v[('um-auto', m)].get(s)
        ratio = 'n/a'
        if stock and um:
            best = min(stock) if m == 'latency' else max(stock)
            ratio = f'{um / best:.2f}'
        label = f'{s // 1048576} MiB' if s >= 1048576 else f'{s // 1024} KiB' if s >= 1024 else f'{s} B'
        out.append(f'| {label} | ' + ' | '.join(cells) + f' | {ratio} |')
    out.append('')
backends = sorted(c for (c, m) in v if c.startswith('backend:'))
if backends:
    ucx = v[('ucx', 'rate')].get(8)
    ob1 = v[('ob1', 'rate')].get(8)
    out.append('### 8 B rate at depth 0, every backend (msg/s, window of 64)\n')
    out.append('| backend | rate | / pml_ucx | / ob1 |')
    out.append('| --- | ---: | ---: | ---: |')
    for c in backends:
        r = v[(c, 'rate')].get(8)
        rel = lambda base: f'{r / base:.2f}' if r and base else 'n/a'
        out.append(f'| {c[8:]} | {fmt(r, "rate")} | {rel(ucx)} | {rel(ob1)} |')
    out.append('')
out.append(f'Best of {sys.argv[4]} launches per point; the widest spread between launches of one point: ' +
           ', '.join(f'{c} {g:.2f}x' for c, g in sorted(worst_gap.items()) if not c.startswith('backend:')) + '.')
out.append(f'CPUs at least {sys.argv[3]}% idle before each run (2 cores; below 90 the numbers are skewed).')
open(sys.argv[2], 'w').write('\n'.join(out) + '\n')
print('\n'.join(out))
EOF

# One PNG per measure.
if command -v gnuplot >/dev/null; then
    for m in latency rate bw; do
        plot=""
        for c in $configs; do
            f=$out/.mp-$c-$m.dat
            # each size's best launch, as in the tables
            awk -F, -v c="$c" -v m="$m" '$1 == c && $2 == m {
                if (!($3 in b) || (m == "latency" ? $4 < b[$3] : $4 > b[$3])) b[$3] = $4 }
                END { for (s in b) print s, b[s] }' "$csv" | sort -n >"$f"
            [ -s "$f" ] && plot="$plot${plot:+, }'$f' using 1:2 with linespoints title '$c'"
        done
        [ -n "$plot" ] || continue
        ylabel=$(case $m in latency) echo "one-way latency (us)" ;; rate) echo "message rate (msg/s)" ;; bw) echo "bandwidth (MB/s)" ;; esac)
        gnuplot <<GP
set terminal pngcairo size 900,560 noenhanced
set output '$out/message-path-$m.png'
set title 'message path: $m, 2 ranks, shared memory'
set logscale x 2
set logscale y
set format x '%.0s%cB'
set xlabel 'message size'
set ylabel '$ylabel'
set key left top
set grid
plot $plot
GP
        rm -f "$out"/.mp-*-"$m".dat
    done
    echo "written: $csv, $out/message-path.md, $out/message-path-{latency,rate,bw}.png"
fi
