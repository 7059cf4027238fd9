#!/usr/bin/env python3
"""Turns the engine benchmark's JSON (--benchmark_format=json) into a gnuplot
PNG: ns per operation against queue depth, log-log, one line per backend, one
panel per (operation, sources), and one panel comparing the SIMD kernels
(backends named "<backend>@<kernel>"). Also prints the list/<backend> ratios,
the ratios issue 5 asks for, the hole-compaction runs and the memory per
element and per peer.

Times are CPU time per operation (the benchmark runs one thread; CPU time does
not count the time the machine gave to other work).

usage: plot-engine-bench.py BENCH.json OUT.png
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

UNIT = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def load(path):
    with open(path) as f:
        data = json.load(f)
    series = collections.defaultdict(dict)  # (op, sources, backend) -> {depth: ns}
    holes = {}  # (backend, compact, live) -> benchmark
    memory = {}  # backend -> benchmark
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        parts = b["name"].split("/")
        op, backend = parts[0], parts[1]
        ns = b["cpu_time"] * UNIT[b["time_unit"]]
        if op in ("arrive", "post_recv"):
            # "arrive/list/sources:1/depth:1024"
            src, depth = (int(p.split(":")[1]) for p in parts[2:4])
            series[(op, src, backend)][depth] = ns
        elif op == "holes":
            # "holes/vector/compact:0/live:16"
            compact, live = (int(p.split(":")[1]) for p in parts[2:4])
            holes[(backend, compact, live)] = dict(b, ns=ns)
        elif op == "memory":
            memory[backend] = b
    return data.get("context", {}), series, holes, memory


def plot(context, series, out):
    main_backends = sorted({k[2] for k in series if "@" not in k[2]},
                           key=lambda b: (b != "list", b))
    kernel_variants = sorted({k[2] for k in series if "@" in k[2]})
    panels = [(op, src, main_backends) for op, src in sorted({(k[0], k[1]) for k in series})]
    if kernel_variants:
        simd = sorted({v.split("@")[0] for v in kernel_variants})
        panels.append(("arrive", 1, sorted(simd + kernel_variants)))
    with tempfile.TemporaryDirectory() as tmp:
        plots = []
        for n, (op, sources, backends) in enumerate(panels):
            lines = []
            for backend in backends:
                points = series.get((op, sources, backend))
                if not points:
                    continue
                dat = os.path.join(tmp, f"{n}-{backend}.dat")
                with open(dat, "w") as f:
                    for depth in sorted(points):
                        f.write(f"{depth} {points[depth]}\n")
                lines.append(f"'{dat}' using 1:2 with linespoints title '{backend}'")
            src = "1 source" if sources == 1 else f"{sources} sources"
            what = "SIMD kernels (auto = avx512 where the CPU has it), " if n == len(panels) - 1 \
                and kernel_variants else ""
            plots.append(f"set title '{what}{op}, match at the end, {src}'\nplot " + ", ".join(lines))
        rows = (len(panels) + 1) // 2
        script = "\n".join([
            f"set terminal pngcairo size 1400,{500 * rows} font ',10' noenhanced",
            f"set output '{out}'",
            "set logscale xy",
            "set xlabel 'queue depth'",
            "set ylabel 'ns per operation (CPU time)'",
            "set grid",
            "set key top left",
            f"set multiplot layout {rows},2 title 'ubermatch engine, {context.get('host_name', '')}, "
            f"{context.get('num_cpus', '?')} CPUs'",
            *plots,
            "unset multiplot",
        ])
        subprocess.run(["gnuplot"], input=script, text=True, check=True)


def ratio_cells(series, op, sources, base, backend, depths=None):
    b = series.get((op, sources, base), {})
    p = series.get((op, sources, backend), {})
    return [f"d{d}: {b[d] / p[d]:.2f}" for d in sorted(p) if d in b and (depths is None or d in depths)]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    context, series, holes, memory = load(sys.argv[1])
    plot(context, series, sys.argv[2])
    panels = sorted({(k[0], k[1]) for k in series})
    backends = sorted({k[2] for k in series}, key=lambda b: (b != "list", b))

    print("ratio list / backend (ns per operation, higher: backend faster)")
    for op, sources in panels:
        for backend in backends:
            if backend == "list":
                continue
            cells = ratio_cells(series, op, sources, "list", backend)
            if cells:
                print(f"  {op:9} sources {sources:4} list/{backend:14} " + "  ".join(cells))

    pairs = [("list", "fuzzy8"), ("list", "vector"), ("perpeer", "fuzzy8")]
    if all(series.get(("arrive", 1, b)) for pair in pairs for b in pair):
        print("\nissue 5: search-time ratios at depths 1, 1024, 8192 (higher: the second faster)")
        for op, sources in panels:
            for base, backend in pairs:
                cells = ratio_cells(series, op, sources, base, backend, {1, 1024, 8192})
                print(f"  {op:9} sources {sources:4} {base + '/' + backend:15} " + "  ".join(cells))

    variants = sorted({k[2] for k in series if "@" in k[2]})
    if variants:
        print("\nSIMD kernels: arrive, 1 source, ns per operation (auto: the kernel this CPU gets)")
        for backend in sorted({v.split("@")[0] for v in variants}):
            for name in [backend] + [v for v in variants if v.startswith(backend + "@")]:
                pts = series.get(("arrive", 1, name), {})
                label = name if "@" in name else name + "@auto"
                print(f"  {label:16} " + "  ".join(f"d{d}: {pts[d]:.0f}" for d in sorted(pts)))

    if holes:
        print("\nholes: long-lived receives each left last in a block of 64 (arrive past them all)")
        for (backend, compact, live), b in sorted(holes.items()):
            off = holes.get((backend, 0, live))
            speed = f"  off/on {off['ns'] / b['ns']:.1f}x" if compact and off else ""
            print(f"  {backend:8} compaction {'on ' if compact else 'off'} live {live:4}: "
                  f"{b['ns']:8.0f} ns, blocks {b['blocks']:5.0f}, holes {b['holes']:6.0f}, "
                  f"slots searched {b['inspected']:6.0f}, bytes {b['bytes']:8.0f}{speed}")

    if memory:
        print("\nmemory (communicator of 1024): bytes per queued element, per peer, empty engine")
        for backend in sorted(memory, key=lambda b: (b != "list", b)):
            m = memory[backend]
            print(f"  {backend:9} per element {m['bytes_per_element']:6.1f}  per peer "
                  f"{m['bytes_per_peer']:6.1f}  empty {m['bytes_empty']:8.0f}")


if __name__ == "__main__":
    main()
