#!/usr/bin/env python3
"""Search cost per backend of a matching trace, as a PNG (gnuplot).

  python3 replay/plot-search-cost.py TRACE_DIR OUT.png [--replay PATH]

Runs `ubermatch-replay TRACE_DIR --no-sweep` and draws its ranking: per
backend, in the replay's order (best first), the time per operation (bars,
left axis) and the elements inspected per operation (points, right axis).
"""
import argparse
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace_dir")
    ap.add_argument("out")
    ap.add_argument("--replay", default="build/replay/ubermatch-replay")
    a = ap.parse_args()
    run = subprocess.run([a.replay, a.trace_dir, "--no-sweep"], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(run.stderr.strip() or run.stdout.strip())
    rows = []  # (backend, inspected/op, ns/op)
    head = ""
    for line in run.stdout.splitlines():
        f = line.split()
        if line.startswith("trace "):
            head = line
        if len(f) >= 7 and f[0].isdigit() and f[2] == "default":
            rows.append((f[1], float(f[4]), float(f[6])))
    if not rows:
        sys.exit(f"{a.trace_dir}: no ranking in the replay's output")
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "cost.dat")
        with open(data, "w") as out:
            out.writelines(f"{i} {b} {ins} {ns}\n" for i, (b, ins, ns) in enumerate(rows))
        script = "\n".join([
            "set terminal pngcairo size 1000,450 font ',10' noenhanced",
            f"set output '{a.out}'",
            f"set title 'search cost per backend, replayed ({head})'",
            "set style fill solid 0.6 border -1",
            "set boxwidth 0.6",
            "set xtics rotate by -35 nomirror",
            "set ylabel 'ns per operation (engine alone)'",
            "set y2label 'elements inspected per operation'",
            "set y2tics",
            "set yrange [0:*]",
            "set y2range [0:*]",
            "set key outside bottom center horizontal",
            f"plot '{data}' using 1:4:xtic(2) with boxes title 'ns/op', "
            f"'' using 1:3 axes x1y2 with points pt 7 ps 1.2 title 'inspected/op'",
        ])
        subprocess.run(["gnuplot"], input=script, text=True, check=True)


if __name__ == "__main__":
    main()
