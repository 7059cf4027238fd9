#!/usr/bin/env bash
# The six deep-queue shapes of issue 7 for ob1, pml_ucx and ubermatch, one mpirun
# per PML (queue_bench runs the six points in one go), printed as one table: rows
# the shapes, columns msg/s per PML and the ratios against pml_ucx (and ob1).
#
#   bash bench/mpi/six-shapes.sh [OUT_DIR] [--reps R] [--time T] [--size BYTES]
#                                [--flush SIZE] [--wait-idle S] [--build DIR]
#
# Shapes (2 ranks, a window of 64 SIZE-byte messages, default 8 B, matched behind
# N queued entries; see queue_bench.c): depth 0; N = 1024 and 8192 exact posted
# receives (same source, other tags); N = 1024 and 8192 ANY_SOURCE posted
# receives (other tags); N = 1024 unexpected messages (other tags).
# PMLs: ob1 (btl self,vader), ucx (pml_ucx_tls/devices any), ubermatch with
# backend `auto` (`bins` when `engine_demo --list-backends` has no `auto`) and
# with `list`. Each value: the median over R repetitions (default 5) of about T/R
# seconds (default T = 1) of the window rate of each repetition's median iteration.
# OUT_DIR (optional) receives six-shapes.csv and six-shapes.md. --launches N
# (default 3): every PML is launched N times, round robin, and each cell keeps
# its best launch: on these virtual machines one launch of the same PML can run
# 3x slower than the next (the host's placement of the virtual CPUs), so a
# single launch per PML compares draws, not PMLs. The notes give the spread.
# BUILD dir: --build or UM_BUILD (default build/); it must hold a build made by
# scripts/build.sh. --wait-idle S: before each mpirun wait up to S seconds for the
# CPUs to be 90% idle (a shared machine). RUN_TIMEOUT: seconds before one mpirun
# is killed (default 300).
# Exit code: 0 when every PML produced all six numbers, 1 otherwise, 2 usage.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${UM_BUILD:-$top/build}
out_dir=
reps=5
time_s=1
size=8
flush=0
wait_idle=0
launches=3
while [ $# -gt 0 ]; do
    case $1 in
    --reps) reps=$2; shift 2 ;;
    --time) time_s=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --flush) flush=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --wait-idle) wait_idle=$2; shift 2 ;;
    --launches) launches=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "six-shapes.sh: unknown option $1" >&2; exit 2 ;;
    *) out_dir=$1; shift ;;
    esac
done
case $launches in '' | *[!0-9]* | 0) echo "six-shapes.sh: --launches takes a count >= 1, not '$launches'" >&2; exit 2 ;; esac
build=$(cd "$build" 2>/dev/null && pwd) || { echo "six-shapes.sh: no build directory; run bash scripts/build.sh" >&2; exit 2; }
bench=$build/bench/mpi/queue_bench
demo=$build/examples/engine_demo
for f in "$bench" "$demo"; do
    [ -x "$f" ] || { echo "six-shapes.sh: $f missing; run bash scripts/build.sh" >&2; exit 2; }
done
# shellcheck source=../../scripts/env.sh
UM_BUILD=$build . "$top/scripts/env.sh"
# shellcheck source=common.sh
. "$here/common.sh"

backends=$("$demo" --list-backends) || { echo "six-shapes.sh: engine_demo --list-backends failed" >&2; exit 2; }
main=bins
grep -qx auto <<<"$backends" && main=auto

shapes=(posted:0 posted:1024 posted:8192 anysrc:1024 anysrc:8192 unexpected:1024)
labels=("depth 0" "1024 exact posted" "8192 exact posted" "1024 ANY_SOURCE posted" "8192 ANY_SOURCE posted"
        "1024 unexpected")
goals=("um ≥ 0.8 ucx" "um ≥ ucx" "um ≥ ucx" "um ≥ 10 ob1, 10 ucx" "um ≥ 10 ob1, 10 ucx" "um ≥ ucx")
points=$(IFS=,; echo "${shapes[*]/%/:$size}")
configs=(ob1 ucx "ubermatch:$main" ubermatch:list)
names=(ob1 pml_ucx "ubermatch $main" "ubermatch list")

declare -A value worst kv
min_idle=100
log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=0
csv="shape,depth,size,np,pml,backend,msgs_per_s,min,max,mean,reps,iters,flush,launch"
for ((launch = 1; launch <= launches; launch++)); do
echo "launch $launch of $launches"
for c in "${!configs[@]}"; do
    cfg=${configs[$c]}
    # shellcheck disable=SC2207
    args=($(um_pml_args "$cfg"))
    cmd=(mpirun -np 2 --bind-to core "${args[@]}" "$bench" --points "$points" --reps "$reps" --time "$time_s"
         --flush "$flush")
    idle=$(um_wait_idle "$wait_idle")
    [ "$idle" -lt "$min_idle" ] && min_idle=$idle
    echo "+ ${cmd[*]}   (CPUs ${idle}% idle before)"
    timeout "${RUN_TIMEOUT:-300}" "${cmd[@]}" >"$log" 2>&1
    rc=$?
    n=0
    while read -r line; do
        um_parse_line kv "$line"
        key=$c,${kv[shape]}:${kv[depth]}
        if [ -z "${value[$key]:-}" ] || awk -v a="${kv[value]}" -v b="${value[$key]}" 'BEGIN { exit !(a > b) }'; then
            value[$key]=${kv[value]}
        fi
        if [ -z "${worst[$key]:-}" ] || awk -v a="${kv[value]}" -v b="${worst[$key]}" 'BEGIN { exit !(a < b) }'; then
            worst[$key]=${kv[value]}
        fi
        pml=${cfg%%:*}
        be=; [ "$pml" = ubermatch ] && be=${cfg#ubermatch:}
        csv+=$'\n'"${kv[shape]},${kv[depth]},${kv[size]},${kv[np]},$pml,$be,${kv[value]},${kv[min]},${kv[max]},${kv[mean]},${kv[reps]},${kv[iters]},${kv[flush]},$launch"
        n=$((n + 1))
        echo "  ${names[$c]}: ${kv[shape]} N=${kv[depth]}: ${kv[value]} msg/s"
    done < <(grep '^shape=' "$log")
    if [ $rc -ne 0 ] || [ $n -ne ${#shapes[@]} ]; then
        failed=1
        echo "  ${names[$c]}: failed (exit $rc, $n of ${#shapes[@]} points)"
        grep -v '^shape=\|^#\|^-*$' "$log" | tail -n 8 | sed 's/^/    /'
    fi
done
done
spread=$(for k in "${!value[@]}"; do awk -v b="${value[$k]}" -v w="${worst[$k]}" 'BEGIN { if (w > 0) printf "%.2f\n", b / w }'; done | sort -g | tail -n 1)

fmt() { if [ -z "$1" ]; then echo "n/a"; else awk -v v="$1" 'BEGIN { if (v >= 1e6) printf "%.2f M", v / 1e6; else printf "%.0f k", v / 1e3 }'; fi; }
ratio() { if [ -n "$1" ] && [ -n "$2" ]; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; else echo "n/a"; fi; }

table=$(
    printf '| shape (N entries ahead) |'
    for n in "${names[@]}"; do printf ' %s |' "$n"; done
    printf ' %s / ucx | %s / ob1 | list / ucx | goal (issue 7, for %s) |\n' "$main" "$main" "$main"
    printf '| --- |'
    for _ in "${names[@]}"; do printf ' ---: |'; done
    printf ' ---: | ---: | ---: | --- |\n'
    for s in "${!shapes[@]}"; do
        k=${shapes[$s]}
        printf '| %s |' "${labels[$s]}"
        for c in "${!configs[@]}"; do printf ' %s |' "$(fmt "${value[$c,$k]:-}")"; done
        printf ' %s | %s | %s | %s |\n' "$(ratio "${value[2,$k]:-}" "${value[1,$k]:-}")" \
            "$(ratio "${value[2,$k]:-}" "${value[0,$k]:-}")" "$(ratio "${value[3,$k]:-}" "${value[1,$k]:-}")" \
            "${goals[$s]}"
    done
)
notes="msg/s of a window of 64 ${size}-byte messages behind N queued entries, 2 ranks (\`mpirun -np 2 --bind-to core\`),
best of $launches launches (round robin over the PMLs; the widest spread of a cell between its best and worst launch: ${spread:-n/a}x), each the
median over $reps repetitions of about $(awk -v t="$time_s" -v r="$reps" 'BEGIN { printf "%.2g", t / r }') s of the rate of each one's median window; flush $flush bytes between iterations;
$(um_machine), $(date -u +%Y-%m-%d);
CPUs at least ${min_idle}% idle just before each run$([ "$min_idle" -lt 90 ] && echo " (WARNING: other processes were running; numbers are skewed)").
um = ubermatch $main. ob1: \`--mca pml ob1 --mca btl self,vader\`; pml_ucx: \`--mca pml_ucx_tls any --mca pml_ucx_devices any\`."
echo
echo "$table"
echo
echo "$notes"
if [ -n "$out_dir" ]; then
    mkdir -p "$out_dir"
    echo "$csv" >"$out_dir/six-shapes.csv"
    { echo "$table"; echo; echo "$notes"; } >"$out_dir/six-shapes.md"
    echo "written: $out_dir/six-shapes.csv, $out_dir/six-shapes.md"
fi
exit $failed
