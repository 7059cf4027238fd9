#!/usr/bin/env bash
# The matching-trace test (part of the test command): records the fds proxy at
# np 4 with pml_ubermatch_trace, replays it through every backend (each must
# make the recorded matches), the same for the other proxies and three MPI
# tests, checks that a tampered match is reported as a bug, and that every kind
# of bad input gets its own clear error.
#
#   bash replay/test-replay.sh [BUILD_DIR]     (scripts/env.sh sourced)
set -u
cd "$(dirname "$0")/.."
build=${1:-build}
replay=$build/replay/ubermatch-replay
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # description, command... (passes when the command succeeds)
    local what=$1
    shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}
expect_error() { # description, expected message part, replay arguments...
    local what=$1 msg=$2
    shift 2
    local out rc
    out=$("$replay" "$@" 2>&1)
    rc=$?
    if [ $rc -eq 2 ] && grep -qF -- "$msg" <<<"$out"; then
        echo "ok   $what: $out"
    else
        echo "FAIL $what (exit $rc, wanted '$msg'): $out"
        fails=$((fails + 1))
    fi
}

# 1. Record.
timeout -k 5 60 "${MPIRUN:-mpirun}" --allow-run-as-root --oversubscribe -np 4 --mca pml ubermatch \
    --mca pml_ubermatch_backend colpnp --mca pml_ubermatch_trace "$tmp/fds" \
    "$build/examples/proxies/fds" --size 4 --iters 3 >"$tmp/run.log" 2>&1 </dev/null
check "fds runs with the trace on" grep -q "PASS fds np 4 " "$tmp/run.log"
check "one trace file per rank" test "$(ls "$tmp"/fds/rank-*.umt 2>/dev/null | wc -l)" -eq 4
"$replay" "$tmp/fds" --print >"$tmp/print.txt" 2>&1
check "--print dumps the events of rank 3" grep -q "^3 [0-9]* [0-9]* arrive " "$tmp/print.txt"
check "recorded matches (an id in the matched column)" \
    awk '$4 == "post_recv" && $11 != 0 { m = 1 } END { exit !m }' "$tmp/print.txt"
check "collective calls recorded" grep -q " coll_begin " "$tmp/print.txt"

# 1b. The OTF2 export: an archive otf2-print (OTF2's own reader) reads, with every engine call
# of the trace as an instant region, every collective entered, and the queue lengths as metrics
# whose highs per rank are those the records give (followed here in awk, apart from the export).
if "$replay" "$tmp/fds" --otf2 "$tmp/otf2" >"$tmp/otf2.log" 2>&1; then
    check "--otf2: otf2-print reads the archive" sh -c "otf2-print '$tmp/otf2/matching.otf2' >'$tmp/otf2.txt'"
    # the calls and collectives of the trace, then of the archive, as "kind count" lines
    awk '$1 !~ /^#/ && $4 != "coll_end" { n[$4 == "coll_begin" ? "collective" : $4]++ }
         END { for (o in n) print o, n[o] }' "$tmp/print.txt" | sort >"$tmp/calls-trace.txt"
    sed -nE 's/^ENTER .*Region: "(collective)?([a-z_]+)?.*/\1\2/p' "$tmp/otf2.txt" | sort | uniq -c |
        awk '{ print $2, $1 }' | sort >"$tmp/calls-otf2.txt"
    check "--otf2: one region entered per engine call and collective of the trace (4 kinds or more)" \
        bash -c "diff '$tmp/calls-trace.txt' '$tmp/calls-otf2.txt' && test \$(wc -l <'$tmp/calls-otf2.txt') -ge 4"
    awk '$1 !~ /^#/ && $12 < 2 {
        r = $1; hit = $12
        if ($4 == "post_recv") { p[r] += 1 - hit; u[r] -= hit }
        else if ($4 == "arrive") { u[r] += 1 - hit; p[r] -= hit }
        else if ($4 == "mprobe") u[r] -= hit
        else if ($4 == "cancel") p[r] -= hit
        if (p[r] > mp[r]) mp[r] = p[r]
        if (u[r] > mu[r]) mu[r] = u[r]
    } END { for (r in mp) print r, mp[r] + 0, mu[r] + 0 }' "$tmp/print.txt" | sort >"$tmp/highs-trace.txt"
    sed -nE 's/^METRIC +([0-9]+) .*UINT64; ([0-9]+)\), .*UINT64; ([0-9]+)\)$/\1 \2 \3/p' "$tmp/otf2.txt" |
        awk '{ if ($2 > p[$1]) p[$1] = $2; if ($3 > u[$1]) u[$1] = $3; seen[$1] = 1 }
             END { for (l in seen) print l, p[l] + 0, u[l] + 0 }' | sort >"$tmp/highs-otf2.txt"
    check "--otf2: the queues' highs per rank are the trace's (posted receives queued at some rank)" \
        bash -c "diff '$tmp/highs-trace.txt' '$tmp/highs-otf2.txt' && awk '\$2 > 0 { m = 1 } END { exit !m }' '$tmp/highs-otf2.txt'"
    expect_error "--otf2 into a directory that is not empty" "the directory is not empty" "$tmp/fds" --otf2 "$tmp/otf2"
elif grep -q "built without OTF2" "$tmp/otf2.log"; then
    echo "skip --otf2: $(cat "$tmp/otf2.log")"
else
    check "--otf2 writes an archive: $(cat "$tmp/otf2.log")" false
fi

# 2. Replay: every backend makes the recorded matches; a recommendation follows.
"$replay" "$tmp/fds" >"$tmp/replay.txt" 2>&1
rc=$?
check "replay through every backend exits 0" test $rc -eq 0
check "the table ranks all 13 backends" test "$(grep -cE "^[0-9]+ +[a-z0-9+]+ +default +0 " "$tmp/replay.txt")" -eq 13
check "recommended --mca line" grep -q "^recommended: mpirun --mca pml ubermatch --mca pml_ubermatch_backend " "$tmp/replay.txt"
check "sweeps of auto, pnp and col" grep -qE "index_at=4 .*|theta=10 .*|k_c=2 " "$tmp/replay.txt"
for kv in index_at=4 index_at=256 index_rent=0 index_rent=4 index_rent=16; do
    check "auto's sweep point $kv makes the recorded matches" grep -qE "^[0-9]+ +auto +$kv +0 " "$tmp/replay.txt"
done

# 2b. The other proxies and three MPI tests (probes, cancels, freed communicators: recycled
# requests and descriptors), recorded and replayed: every backend makes the recorded matches.
for spec in "radix --size 256 --iters 2" "nbody --size 64 --iters 3" "miniamr --size 4 --iters 5"; do
    read -r -a args <<<"$spec"
    timeout -k 5 60 "${MPIRUN:-mpirun}" --allow-run-as-root --oversubscribe -np 4 --mca pml ubermatch \
        --mca pml_ubermatch_trace "$tmp/${args[0]}" "$build/examples/proxies/${args[0]}" "${args[@]:1}" \
        >"$tmp/${args[0]}.log" 2>&1 </dev/null
    "$replay" "$tmp/${args[0]}" --no-sweep --reps 1 >"$tmp/${args[0]}.replay" 2>&1
    check "${args[0]} recorded and replayed, 0 mismatches" test $? -eq 0
done
# The same with each way of writing forced (the default, auto, writes a trace this small
# through the page cache).
for d in true false; do
    timeout -k 5 60 "${MPIRUN:-mpirun}" --allow-run-as-root --oversubscribe -np 4 --mca pml ubermatch \
        --mca pml_ubermatch_trace "$tmp/fds-$d" --mca pml_ubermatch_trace_direct $d \
        "$build/examples/proxies/fds" --size 4 --iters 3 >"$tmp/fds-$d.log" 2>&1 </dev/null
    "$replay" "$tmp/fds-$d" --no-sweep --reps 1 >"$tmp/fds-$d.replay" 2>&1
    check "fds recorded with pml_ubermatch_trace_direct $d and replayed, 0 mismatches" test $? -eq 0
done
# Direct I/O leaves the trace out of the page cache, pml_ubermatch_trace_direct false puts it in
# (rank 0's 3.6 MB, seven chunks; the last bytes and the header go through the page cache either way).
cached_share() { # file -> per cent of its bytes in the page cache
    fincore --bytes --noheadings --output RES,SIZE "$1" | awk '{ print int(100 * $1 / $2) }'
}
if dd if=/dev/zero of="$tmp/probe" bs=4096 count=1 oflag=direct status=none 2>/dev/null &&
    fallocate -l 4096 "$tmp/probe2" 2>/dev/null; then
    for d in true false auto; do
        timeout -k 5 60 "${MPIRUN:-mpirun}" --allow-run-as-root --oversubscribe -np 2 --mca pml ubermatch \
            --mca pml_ubermatch_trace "$tmp/io-$d" --mca pml_ubermatch_trace_direct $d \
            "$build/examples/proxies/fds" --size 64 --iters 500 >"$tmp/io-$d.log" 2>&1 </dev/null
    done
    direct_share=$(cached_share "$tmp/io-true/rank-0.umt")
    buffered_share=$(cached_share "$tmp/io-false/rank-0.umt")
    check "a trace written with direct I/O is not in the page cache ($direct_share%)" test "$direct_share" -lt 50
    check "with pml_ubermatch_trace_direct false it is ($buffered_share%)" test "$buffered_share" -ge 50
    # auto judges the page cache by its last 8 whole chunks: seven are written before any judgement.
    auto_share=$(cached_share "$tmp/io-auto/rank-0.umt")
    check "with pml_ubermatch_trace_direct auto a trace of seven chunks is too ($auto_share%)" test "$auto_share" -ge 50
else
    echo "skipped: the file system under $tmp refuses O_DIRECT or fallocate (direct I/O not checked, not counted)"
fi
# assertions: relaxed engines beside the engine of Open MPI's own traffic under one cid, refused
# wildcards, engines swapped by MPI_Comm_set_info, overtaking allowed.
for t in probe cancel lifetime assertions; do
    UM_BUILD=$build MPI_TESTS_ONLY=$t bash test/mpi/run-mpi-tests.sh "$build/test-mpi" --mca pml ubermatch \
        --mca pml_ubermatch_trace "$tmp/mpi-$t" >"$tmp/mpi-$t.log" 2>&1
    "$replay" "$tmp/mpi-$t" --no-sweep --reps 1 >"$tmp/mpi-$t.replay" 2>&1
    check "MPI test $t recorded and replayed, 0 mismatches" test $? -eq 0
done

# MPI_Comm_spawn: the spawned job's ranks count from 0 too and write files of their own
# (jobL-rank-R.umt), replayed with their parents'.
timeout -k 5 60 "${MPIRUN:-mpirun}" --allow-run-as-root --oversubscribe -np 2 --mca pml ubermatch \
    --mca pml_ubermatch_trace "$tmp/spawn" "$build/test/mpi/spawn" >"$tmp/spawn.log" 2>&1 </dev/null
check "MPI_Comm_spawn runs with the trace on" grep -q "^PASS spawn" "$tmp/spawn.log"
check "the spawned job's files apart from its parents'" \
    test "$(ls "$tmp"/spawn/job*-rank-[01].umt "$tmp"/spawn/rank-[01].umt 2>/dev/null | wc -l)" -eq 4
"$replay" "$tmp/spawn" --no-sweep --reps 1 >"$tmp/spawn.replay" 2>&1
check "parents and children replayed, 0 mismatches" test $? -eq 0
check "as 4 ranks of 2 jobs" grep -q "4 ranks in 2 jobs" "$tmp/spawn.replay"
# A relaxed backend asked for, on a trace with the ANY_TAG receives it refuses: unfit, no bug.
"$replay" "$tmp/spawn" --backends exact,auto --no-sweep --reps 1 >"$tmp/spawn-exact.replay" 2>&1
check "a relaxed backend the trace does not fit: exit 0" test $? -eq 0
check "... said so, and not recommended" grep -q "^exact: does not fit this trace: it refused [1-9]" "$tmp/spawn-exact.replay"
check "... the full backend recommended" grep -q "pml_ubermatch_backend auto " "$tmp/spawn-exact.replay"
# A rerun into the same directory with fewer ranks leaves the earlier run's ranks 2 and 3: refused.
cp -r "$tmp/fds" "$tmp/mixed"
timeout -k 5 60 "${MPIRUN:-mpirun}" --allow-run-as-root --oversubscribe -np 2 --mca pml ubermatch \
    --mca pml_ubermatch_trace "$tmp/mixed" "$build/examples/mpi/pingpong_demo" >"$tmp/mixed.log" 2>&1 </dev/null
expect_error "files of two runs in one directory" "the trace files are of 2 different runs" "$tmp/mixed"
check "the rerun warned at its start" grep -q "ubermatch trace: $tmp/mixed holds $tmp/mixed/rank-2.umt and maybe more of an earlier run" "$tmp/mixed.log"

# 3. A tampered match (the first post_recv or arrive of rank 0 with a matched address,
# changed; version 4's 16-byte records: op in the low 4 bits of a, matched in b above its
# low 19 bits) is reported as a bug.
cp -r "$tmp/fds" "$tmp/bad"
python3 - "$tmp/bad/rank-0.umt" <<'PY'
import struct, sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read())
for off in range(56, len(b) - 16, 16):
    a, w = struct.unpack_from('<QQ', b, off)
    if a & 0xf in (2, 3) and w >> 19 != 0:
        struct.pack_into('<Q', b, off + 8, (999999 << 19) | (w & 0x7ffff)); break
open(p, 'wb').write(b)
PY
out=$("$replay" "$tmp/bad" --backends list,auto --no-sweep 2>&1)
check "a changed match is a MISMATCH, exit 1" test $? -eq 1
check "the mismatch names file and event" grep -q "^MISMATCH list: .*rank-0.umt rank 0 event .*recorded match ?" <<<"$out"

# A job that hangs, killed: once a second passes with nothing recorded the ranks write what they
# recorded, so --partial replays it and shows what each rank waits for.
cat >"$tmp/hang.c" <<'C'
#include <mpi.h>
int main(int argc, char **argv) {
    int rank, v = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 100; i++) {
        if (rank == 0) MPI_Send(&i, 1, MPI_INT, 1, i % 4, MPI_COMM_WORLD);
        else MPI_Recv(&v, 1, MPI_INT, 0, i % 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Recv(&v, 1, MPI_INT, 1 - rank, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* never sent */
    MPI_Finalize();
    return 0;
}
C
if mpicc -o "$tmp/hang" "$tmp/hang.c"; then
    timeout -k 5 10 "${MPIRUN:-mpirun}" --allow-run-as-root --oversubscribe -np 2 --mca pml ubermatch \
        --mca pml_ubermatch_trace "$tmp/hang-trace" "$tmp/hang" >"$tmp/hang.log" 2>&1 </dev/null
    "$replay" "$tmp/hang-trace" --partial --backends list,auto --no-sweep --reps 1 >"$tmp/hang.replay" 2>&1
    check "a hung job killed: its trace replayed with --partial" test $? -eq 0
    waits() { grep -A1 "^rank $1 at the cut:" "$tmp/hang.replay" | grep -qF "communicator 0: 1 receives waiting (source, tag): ($2, 99)"; }
    check "... rank 0's receive still waiting shown" waits 0 1
    check "... rank 1's too" waits 1 0
    check "... with the 100 messages before it" grep -qE "^trace .*: 2 ranks, 20[0-9] events" "$tmp/hang.replay"
else
    check "mpicc builds the hanging program" false
fi

# A call the job's engine refused (a relaxed backend's assertion: result 2) queued nothing, so
# it is not replayed: a made-up trace (version 4 as matching/trace.h lays it out) where a
# refused ANY_TAG receive comes before the message a later receive takes.
mkdir "$tmp/refused"
python3 - "$tmp/refused/rank-0.umt" <<'PY'
import struct, sys
def ev(op, result, source, tag, addr, matched):  # an event: op, result, source, tag, addresses
    a = (addr << 16) | ((source & 0x1fff) << 6) | (result << 4) | op
    return struct.pack('<QQ', a, (matched << 16) | (tag & 0x7ffff))
recs = [struct.pack('<QQ', 11, 0), struct.pack('<QQ', 10, (8 << 32) | 2),  # time; context: cid 0, 8 B, size 2
        ev(1, 0, 0, 2, 0, 0),            # comm_create: rank 0 of 2, full matching
        ev(2, 2, 1, -1, 0x1000, 0),      # post_recv (1, ANY_TAG), refused
        ev(3, 0, 1, 5, 0x2000, 0),       # arrive (1, 5), unexpected
        ev(2, 1, 1, 5, 0x3000, 0x2000),  # post_recv (1, 5) takes it
        struct.pack('<QQ', 11, 100), struct.pack('<QQ', 9, 0)]  # time; end
head = b'UMTRACE\0' + struct.pack('<IIiIQd', 4, 16, 0, 0, 0, 1.0) + b'exact'.ljust(16, b'\0')
open(sys.argv[1], 'wb').write(head + b''.join(recs))
PY
"$replay" "$tmp/refused" --backends list,auto --no-sweep --reps 1 >"$tmp/refused.replay" 2>&1
check "a call refused in the job is not replayed: 0 mismatches" test $? -eq 0

# A relaxed backend replayed keeps Open MPI's own traffic (negative tags) on an auto engine, as
# the PML does: a job recorded on auto whose user traffic names every source, while one of its
# collectives' receives takes MPI_ANY_SOURCE, fits `nosource`.
mkdir "$tmp/internal"
python3 - "$tmp/internal/rank-0.umt" <<'PY'
import struct, sys
def ev(op, result, source, tag, addr, matched):
    a = (addr << 16) | ((source & 0x1fff) << 6) | (result << 4) | op
    return struct.pack('<QQ', a, (matched << 16) | (tag & 0x7ffff))
recs = [struct.pack('<QQ', 11, 0), struct.pack('<QQ', 10, (8 << 32) | 2),
        ev(1, 0, 0, 2, 0, 0),                # comm_create: rank 0 of 2, full matching
        ev(2, 0, -1, -10, 0x1000, 0),        # post_recv (ANY_SOURCE, -10): a collective's
        ev(3, 1, 1, -10, 0x2000, 0x1000),    # arrive (1, -10) takes it
        ev(2, 0, 1, 5, 0x3000, 0),           # post_recv (1, 5)
        ev(3, 1, 1, 5, 0x4000, 0x3000),      # arrive (1, 5) takes it
        struct.pack('<QQ', 11, 100), struct.pack('<QQ', 9, 0)]
head = b'UMTRACE\0' + struct.pack('<IIiIQd', 4, 16, 0, 0, 0, 1.0) + b'auto'.ljust(16, b'\0')
open(sys.argv[1], 'wb').write(head + b''.join(recs))
PY
out=$("$replay" "$tmp/internal" --backends nosource,auto --no-sweep --reps 1 2>&1)
check "a relaxed backend keeps Open MPI's traffic on auto: exit 0" test $? -eq 0
check "... nosource fits a job whose ANY_SOURCE receives are all Open MPI's" \
    bash -c '! grep -q "does not fit" <<<"$1" && grep -Eq "^[0-9]+ +nosource +default +0 " <<<"$1"' _ "$out"

# 4. Bad input: each gets its own error naming the file.
f=$tmp/fds/rank-1.umt
mkdir "$tmp/in"
head -c 30 "$f" >"$tmp/in/short.umt"
expect_error "header cut" "short.umt: truncated: 30 bytes, shorter than the 56-byte header" "$tmp/in/short.umt"
head -c $((56 + 16 * 3 + 7)) "$f" >"$tmp/in/part.umt"
expect_error "partial record" "part.umt: truncated: 7 bytes of a partial record at byte 104" "$tmp/in/part.umt"
head -c $((56 + 16 * 3)) "$f" >"$tmp/in/noend.umt"
expect_error "no end record" "noend.umt: truncated: no end record" "$tmp/in/noend.umt"
printf 'GIF89a, certainly not a trace; padded to be longer than a header.....' >"$tmp/in/foreign.umt"
expect_error "foreign file" "foreign.umt: not an ubermatch trace" "$tmp/in/foreign.umt"
{ head -c 8 "$f"; printf '\001\000\000\000'; tail -c +13 "$f"; } >"$tmp/in/v1.umt"
expect_error "older version" "v1.umt: trace format version 1, this build reads versions 2 to 5" "$tmp/in/v1.umt"
{ head -c 8 "$f"; printf '\006\000\000\000'; tail -c +13 "$f"; } >"$tmp/in/v6.umt"
expect_error "newer version" "v6.umt: trace format version 6, this build reads versions 2 to 5" "$tmp/in/v6.umt"
{ head -c 8 "$f"; printf '\002\000\000\000'; tail -c +13 "$f"; } >"$tmp/in/v2.umt"
expect_error "version 2 with version 5's records" "v2.umt: record size 16, version 2 has 48" "$tmp/in/v2.umt"
{ head -c 8 "$f"; printf '\003\000\000\000'; tail -c +13 "$f"; } >"$tmp/in/v3.umt"
expect_error "version 3 with version 5's records" "v3.umt: record size 16, version 3 has 24" "$tmp/in/v3.umt"
{ head -c $((56 + 16 * 5)) "$f"; printf '\017'; tail -c +$((56 + 16 * 5 + 2)) "$f"; } >"$tmp/in/badop.umt"
expect_error "unknown operation" "badop.umt: corrupt: record 5 has unknown operation 15" "$tmp/in/badop.umt"
# A run that died before MPI_Finalize: its file has no end record and, written with direct I/O,
# ends in the zeros of space allocated ahead. Rank 0's trace cut after half its records so:
# refused, naming --partial; with --partial, read up to the cut and replayed, 0 mismatches.
mkdir "$tmp/cut"
keep=$((56 + 16 * (($(stat -c %s "$tmp/fds/rank-0.umt") - 56) / 32)))
head -c $keep "$tmp/fds/rank-0.umt" >"$tmp/cut/rank-0.umt"
truncate -s $((keep + 65536)) "$tmp/cut/rank-0.umt"
expect_error "a cut trace" "rank-0.umt: truncated: no end record, the file ends in zeros" "$tmp/cut"
out=$("$replay" "$tmp/cut" --partial --backends list,auto --no-sweep 2>&1)
check "--partial replays a cut trace up to its cut, 0 mismatches" test $? -eq 0
check "--partial says how many events it read" \
    grep -q "rank-0.umt: cut (no end record.* the [1-9][0-9]* events written before the cut are read" <<<"$out"
mkdir "$tmp/empty"
expect_error "empty directory" "no *.umt trace files" "$tmp/empty"
expect_error "unknown backend" "list" "$tmp/fds" --backends nosuch
expect_error "unknown parameter" "valid: bins, theta" "$tmp/fds" --params nosuch=1

# A trace directory is made with its missing parents; one that cannot be stops start-up, named.
timeout -k 5 60 "${MPIRUN:-mpirun}" --allow-run-as-root --oversubscribe -np 2 --mca pml ubermatch \
    --mca pml_ubermatch_trace "$tmp/new/job/trace" "$build/examples/mpi/pingpong_demo" >"$tmp/newdir.log" 2>&1 </dev/null
check "a trace directory is made with its parents" test -s "$tmp/new/job/trace/rank-1.umt"
timeout -k 5 60 "${MPIRUN:-mpirun}" --allow-run-as-root --oversubscribe -np 2 --mca pml ubermatch \
    --mca pml_ubermatch_trace "$tmp/fds/rank-0.umt/trace" "$build/examples/mpi/pingpong_demo" >"$tmp/baddir.log" 2>&1 </dev/null
check "a trace directory under a file stops start-up, named" \
    grep -q "pml_ubermatch_trace: cannot create directory $tmp/fds/rank-0.umt/trace: Not a directory" "$tmp/baddir.log"
timeout -k 5 60 "${MPIRUN:-mpirun}" --allow-run-as-root --oversubscribe -np 2 --mca pml ubermatch \
    --mca pml_ubermatch_trace "$tmp/fds/rank-0.umt" "$build/examples/mpi/pingpong_demo" >"$tmp/notdir.log" 2>&1 </dev/null
check "a file given as the trace directory stops start-up, named" \
    grep -q "pml_ubermatch_trace: $tmp/fds/rank-0.umt exists and is not a directory" "$tmp/notdir.log"

[ $fails -eq 0 ] && echo "replay tests: all passed" || echo "replay tests: $fails failed"
[ $fails -eq 0 ]
