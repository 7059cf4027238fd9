#!/usr/bin/env python3
"""Turns the engine benchmark's JSON (--benchmark_format=json) into a gnuplot
PNG: ns per operation against queue depth, log-log, one line per backend, one
panel per (operation, sources). Also prints the list/<backend> ratios.

usage: plot-engine-bench.py BENCH.json OUT.png
"""
import collections
import json
import os
import subprocess
import sys
import tempfile


def load(path):
    with open(path) as f:
        data = json.load(f)
    # name: "arrive/list/sources:1/depth:1024"
    series = collections.defaultdict(dict)  # (op, sources, backend) -> {depth: ns}
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        op, backend, src, depth = b["name"].split("/")[:4]
        ns = b["real_time"] * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
        series[(op, int(src.split(":")[1]), backend)][int(depth.split(":")[1])] = ns
    return data.get("context", {}), series


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    context, series = load(sys.argv[1])
    backends = sorted({k[2] for k in series}, key=lambda b: (b != "list", b))
    panels = sorted({(k[0], k[1]) for k in series})
    with tempfile.TemporaryDirectory() as tmp:
        plots = []
        for op, sources in panels:
            lines = []
            for backend in backends:
                points = series.get((op, sources, backend))
                if not points:
                    continue
                dat = os.path.join(tmp, f"{op}-{sources}-{backend}.dat")
                with open(dat, "w") as f:
                    for depth in sorted(points):
                        f.write(f"{depth} {points[depth]}\n")
                lines.append(f"'{dat}' using 1:2 with linespoints title '{backend}'")
            src = "1 source" if sources == 1 else f"{sources} sources"
            plots.append(f"set title '{op}, match at the end, {src}'\nplot " + ", ".join(lines))
        script = "\n".join([
            "set terminal pngcairo size 1400,1000 font ',10' noenhanced",
            f"set output '{sys.argv[2]}'",
            "set logscale xy",
            "set xlabel 'queue depth'",
            "set ylabel 'ns per operation'",
            "set grid",
            "set key top left",
            f"set multiplot layout 2,2 title 'ubermatch engine, {context.get('host_name', '')}, "
            f"{context.get('num_cpus', '?')} CPUs'",
            *plots,
            "unset multiplot",
        ])
        subprocess.run(["gnuplot"], input=script, text=True, check=True)

    print("ratio list / backend (ns per operation, higher: backend faster)")
    for op, sources in panels:
        base = series.get((op, sources, "list"), {})
        for backend in backends:
            if backend == "list":
                continue
            pts = series.get((op, sources, backend), {})
            cells = [f"d{d}: {base[d] / pts[d]:.2f}" for d in sorted(pts) if d in base]
            print(f"  {op:9} sources {sources:4} list/{backend:8} " + "  ".join(cells))


if __name__ == "__main__":
    main()
