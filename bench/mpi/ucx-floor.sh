#!/usr/bin/env bash
# UCX's own cost on this machine, the floor under every PML built on it:
# ucx_perftest (Debian package ucx-utils) between two processes over
# loopback, 8-byte messages, UCP active messages (what pml/ubermatch sends)
# and UCP tag matching (what pml_ucx sends).
#
#   bash bench/mpi/ucx-floor.sh [--size BYTES] [--iters N] [--tls TLS]
#
# Prints one line per test, "test=ucp_am_lat size=8 latency_us=... rate=..."
# (latency: one-way, half the round trip; rate: messages per second), and a
# markdown table. --tls sets UCX_TLS for both processes (default: UCX's own
# choice, as our worker uses unless pml_ubermatch_ucx_tls says otherwise).
set -u
size=8
iters=200000
tls=
while [ $# -gt 0 ]; do
    case $1 in
    --size) size=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --tls) tls=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ucx-floor.sh: unknown argument $1 (valid: --size, --iters, --tls)" >&2; exit 2 ;;
    esac
done
command -v ucx_perftest >/dev/null || { echo "ucx-floor.sh: ucx_perftest not found: apt-get install ucx-utils" >&2; exit 2; }
[ -n "$tls" ] && export UCX_TLS=$tls

port=$((13400 + RANDOM % 500))
rows=()
for t in ucp_am_lat ucp_am_bw tag_lat tag_bw; do
    ucx_perftest -t "$t" -s "$size" -n "$iters" -p "$port" >/dev/null 2>&1 &
    server=$!
    sleep 0.5
    line=$(timeout 120 ucx_perftest 127.0.0.1 -t "$t" -s "$size" -n "$iters" -p "$port" -f 2>/dev/null | tail -1)
    wait "$server" 2>/dev/null
    port=$((port + 1))
    # columns: iterations, latency 50%, avg, overall, bw avg, overall, rate avg, overall
    read -r _ _ _ lat _ _ _ rate <<<"$line"
    if [ -z "${rate:-}" ]; then
        echo "test=$t size=$size failed"
        continue
    fi
    echo "test=$t size=$size latency_us=$lat rate=$rate"
    rows+=("| $t | $lat | $rate |")
done
echo
echo "| ucx_perftest, $size B | latency (us, one-way) | message rate (msg/s) |"
echo "| --- | ---: | ---: |"
printf '%s\n' "${rows[@]}"
