#!/usr/bin/env python3
"""Queue depth over time of a matching trace, per communicator, as a PNG (gnuplot).

  python3 replay/plot-queue-depth.py TRACE_DIR OUT.png [--rank R] [--replay PATH] [--partial]

Reads `ubermatch-replay TRACE_DIR --print` and follows the recorded matches:
a receive or message that matched nothing is queued, a match (or mprobe, or a
cancel that removed) takes one out. Plots the posted and unexpected queue
lengths of every communicator of rank R (default 0) against time. --partial:
the trace of a job that died or was killed in a hang (ubermatch-replay's).
"""
import argparse
import collections
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace_dir")
    ap.add_argument("out")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--replay", default="build/replay/ubermatch-replay")
    ap.add_argument("--partial", action="store_true", help="read files cut short (ubermatch-replay --partial)")
    a = ap.parse_args()
    text = subprocess.run([a.replay, a.trace_dir, "--print"] + (["--partial"] if a.partial else []),
                          capture_output=True, text=True)
    if text.returncode != 0:
        sys.exit(text.stderr.strip())
    depth = collections.defaultdict(lambda: [0, 0])  # cid -> [posted, unexpected]
    series = collections.defaultdict(list)  # cid -> (ms, posted, unexpected)
    for line in text.stdout.splitlines():
        if line.startswith("#"):
            continue
        f = line.split()
        rank, t_ns, cid, op, matched, result = int(f[0]), int(f[1]), f[2], f[3], f[10], f[11]
        if rank != a.rank:
            continue
        d = depth[cid]
        if result == "2":  # refused under an assertion: nothing queued or taken
            continue
        if op == "post_recv":
            d[0 if result == "0" else 1] += 1 if result == "0" else -1
        elif op == "arrive":
            d[1 if result == "0" else 0] += 1 if result == "0" else -1
        elif op == "mprobe" and result == "1":
            d[1] -= 1
        elif op == "cancel" and result == "1":
            d[0] -= 1
        else:
            continue
        series[cid].append((t_ns / 1e6, d[0], d[1]))
    if not series:
        sys.exit(f"{a.trace_dir}: no matching events of rank {a.rank}")
    with tempfile.TemporaryDirectory() as tmp:
        plots = []
        for cid, rows in sorted(series.items(), key=lambda kv: int(kv[0])):
            path = os.path.join(tmp, f"cid{cid}.dat")
            with open(path, "w") as out:
                out.writelines(f"{t} {p} {u}\n" for t, p, u in rows)
            plots.append(f"'{path}' using 1:2 with steps title 'cid {cid} posted'")
            plots.append(f"'{path}' using 1:3 with steps title 'cid {cid} unexpected'")
        script = "\n".join([
            "set terminal pngcairo size 1100,500 font ',10' noenhanced",
            f"set output '{a.out}'",
            f"set title 'queue depth over time, rank {a.rank} ({a.trace_dir})'",
            "set xlabel 'time since the first event (ms)'",
            "set ylabel 'queued elements'",
            "set key outside right",
            "plot " + ", ".join(plots),
        ])
        subprocess.run(["gnuplot"], input=script, text=True, check=True)


if __name__ == "__main__":
    main()
