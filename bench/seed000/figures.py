#!/usr/bin/env python3
"""Tables and gnuplot PNGs of Ghazimirsaeed et al.'s measurements (ParCo 2019,
Figs. 7-10, Table 2) from the proxies' --stats lines (run-paper-figures.sh).

usage: figures.py STATS.txt[.gz] OUT_DIR

Search time is the engine's own timers (pvars *_search_ns): per class
(collective, point-to-point, all) and per queue searched (UMQ: receives and
probes searching the unexpected-message queue; PRQ: arrivals searching the
posted-receive queue). "All ranks" sums every rank, the same ratio as the
paper's average across processes; fds is shown at rank 0, as in the paper,
and over all ranks. A speedup is list's search time over the backend's, in the
same repetition (the backends of one repetition run back to back), and the
median over repetitions. Queues: stats.queues (all queues the engine holds) and
the dedicated queues of colpnp's COL and PNP parts, against the caps
floor(k_c sqrt(n)) + floor(k_p sqrt(n)), k_c = k_p = 8 (the paper's k = k_c +
k_p = 16). Overhead: the engine's overhead_ns (pnp's partner extraction, col's
level creation) over its search time, summed over ranks (Table 2).

Writes OUT_DIR/speedups.md, depth.md, queues.md, overhead.md, README.md (an
index), speedup-PROXY.png, dedicated-queues.png and queues-vs-perpeer.png, and
prints the fds numbers issue 4 asks to quote.
"""
import collections
import gzip
import math
import os
import statistics
import subprocess
import sys

PROXIES = ["radix", "nbody", "miniamr", "fds"]
BACKENDS = ["colpnp", "col+list", "list+pnp", "perpeer"]
CLASSES = ["coll", "p2p", "all"]
QUEUES = ["UMQ", "PRQ", "both"]
K_C = K_P = 8


def cap(k, n):
    return math.isqrt(k * k * n)  # floor(k sqrt(n)), as matching/pnp.cc queue_cap


def load(path):
    """(proxy, np, backend, rep) -> {rank: {key: int}}"""
    runs = collections.defaultdict(dict)
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for line in f:
            if not line.startswith("STATS backend="):
                continue
            kv = dict(field.split("=", 1) for field in line.split()[1:])
            key = (kv.pop("proxy"), int(kv.pop("np")), kv.pop("backend"), int(kv.pop("rep")))
            rank = int(kv.pop("rank"))
            runs[key][rank] = {k: int(v) for k, v in kv.items()}
    return runs


def search_ns(ranks, scope):
    """{(queue, class): ns} over the ranks of a scope ('all' or 'rank0')."""
    chosen = [ranks[0]] if scope == "rank0" else list(ranks.values())
    out = collections.defaultdict(int)
    for r in chosen:
        for c in ("coll", "p2p"):
            both = r[f"{c}_search_ns"]
            prq = r[f"{c}_posted_search_ns"]
            for q, v in (("UMQ", both - prq), ("PRQ", prq), ("both", both)):
                out[(q, c)] += v
                out[(q, "all")] += v
    return out


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt(x, digits=2):
    if x != x:  # nan
        return "-"
    if x >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}f}"


class Data:
    def __init__(self, runs):
        self.runs = runs
        self.nps = sorted({k[1] for k in runs})
        self.reps = sorted({k[3] for k in runs})
        self.proxies = [p for p in PROXIES if any(k[0] == p for k in runs)]

    def reps_of(self, proxy, np, backend):
        return [self.runs[(proxy, np, backend, r)] for r in self.reps if (proxy, np, backend, r) in self.runs]

    def speedup(self, proxy, np, backend, scope, q, c):
        return median(self.ratios(proxy, np, backend, scope, q, c))

    def ratios(self, proxy, np, backend, scope, q, c):
        """list's search time over the backend's, one per repetition."""
        ratios = []
        for r in self.reps:
            base = self.runs.get((proxy, np, "list", r))
            other = self.runs.get((proxy, np, backend, r))
            if base is None or other is None:
                continue
            b = search_ns(base, scope)[(q, c)]
            o = search_ns(other, scope)[(q, c)]
            if b > 0 and o > 0:
                ratios.append(b / o)
        return ratios

    def spread(self):
        """(max - min) / median of the per-repetition all-elements speedups, over every cell."""
        out = []
        for proxy in self.proxies:
            scope = "rank0" if proxy == "fds" else "all"
            for np in self.nps:
                for b in BACKENDS:
                    rs = self.ratios(proxy, np, b, scope, "both", "all")
                    if len(rs) > 1:
                        out.append((max(rs) - min(rs)) / median(rs))
        return sorted(out)

    def list_ms(self, proxy, np, scope, q, c):
        return median([search_ns(x, scope)[(q, c)] / 1e6 for x in self.reps_of(proxy, np, "list")])

    def per_rank(self, proxy, np, backend, key, scope):
        """Median over repetitions of the mean over ranks (or rank 0's value)."""
        vals = []
        for x in self.reps_of(proxy, np, backend):
            vals.append(x[0][key] if scope == "rank0" else statistics.mean(r[key] for r in x.values()))
        return median(vals)

    def summed(self, proxy, np, backend, keys, scope):
        vals = []
        for x in self.reps_of(proxy, np, backend):
            chosen = [x[0]] if scope == "rank0" else x.values()
            vals.append(sum(r[k] for r in chosen for k in keys))
        return vals

    def scopes(self, proxy):
        return [("rank0", "rank 0"), ("all", "all ranks")] if proxy == "fds" else [("all", "all ranks")]


def speedup_tables(d):
    out = ["# Queue search time speedup over `list` (Figs. 7-8)", "",
           "list's search time over the backend's, median over repetitions; > 1: faster than list. "
           "UMQ: searches of the unexpected-message queue (receives, probes); PRQ: of the posted-receive "
           "queue (arrivals); both: all searches. The `list (ms)` rows give list's search time itself.", ""]
    sp = d.spread()
    if sp:
        out += [f"Noise: between repetitions, (max - min) / median of a backend's speedup over all elements is "
                f"{sp[len(sp) // 2]:.2f} in the median cell and {sp[int(0.9 * (len(sp) - 1))]:.2f} at the 90th "
                f"percentile ({len(d.reps)} repetitions).", ""]
    for proxy in d.proxies:
        for scope, label in d.scopes(proxy):
            out += [f"## {proxy}, {label}", "",
                    "| np | backend | " + " | ".join(f"{q} {c}" for q in QUEUES for c in CLASSES) + " |",
                    "|---|---|" + "---:|" * (len(QUEUES) * len(CLASSES))]
            for np in d.nps:
                out.append(f"| {np} | list (ms) | " +
                           " | ".join(fmt(d.list_ms(proxy, np, scope, q, c), 3) for q in QUEUES for c in CLASSES) + " |")
                for b in BACKENDS:
                    out.append(f"| {np} | {b} | " +
                               " | ".join(fmt(d.speedup(proxy, np, b, scope, q, c)) for q in QUEUES for c in CLASSES) + " |")
            out.append("")
    return out


def depth_tables(d):
    out = ["# Search depth (elements inspected per search)", "",
           "Mean elements inspected per search, all ranks (fds: rank 0 too), median over repetitions; "
           "the timers' counterpart that does not depend on the machine.", ""]
    names = ["list"] + BACKENDS
    for proxy in d.proxies:
        for scope, label in d.scopes(proxy):
            out += [f"## {proxy}, {label}", "",
                    "| np | class | searches | " + " | ".join(names) + " |",
                    "|---|---|---:|" + "---:|" * len(names)]
            for np in d.nps:
                for c in ("coll", "p2p"):
                    searches = median(d.summed(proxy, np, "list", [f"{c}_searches"], scope))
                    cells = []
                    for b in names:
                        ins = d.summed(proxy, np, b, [f"{c}_inspected"], scope)
                        srch = d.summed(proxy, np, b, [f"{c}_searches"], scope)
                        cells.append(fmt(median([i / s for i, s in zip(ins, srch) if s > 0])))
                    out.append(f"| {np} | {c} | {fmt(searches, 0)} | " + " | ".join(cells) + " |")
            out.append("")
    return out


def queue_tables(d):
    out = ["# Queues allocated (Figs. 9-10)", "",
           "colpnp's dedicated queues of its COL part (collective) and PNP part (point-to-point), both sides, "
           "against their caps floor(k_c sqrt(n)) and floor(k_p sqrt(n)), k_c = k_p = 8 (k = k_c + k_p = 16, "
           "16 sqrt(n) in the last column); and the queues each engine holds in all (stats.queues: colpnp's 6 "
           "fixed ones plus the dedicated ones; perpeer's 2n + 1: a posted and an unexpected queue per peer and "
           "an ANY_SOURCE queue; list's 2). Mean over ranks, or rank 0; median over repetitions.", ""]
    out += ["## Dedicated queues of colpnp (Fig. 9)", "",
            "| proxy | ranks | np | COL | PNP | COL + PNP | cap COL | cap PNP | cap total | 16 sqrt(n) |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for proxy in d.proxies:
        for scope, label in d.scopes(proxy):
            for np in d.nps:
                col = d.per_rank(proxy, np, "colpnp", "dedicated_coll_queues", scope)
                pnp = d.per_rank(proxy, np, "colpnp", "dedicated_p2p_queues", scope)
                out.append(f"| {proxy} | {label} | {np} | {fmt(col, 1)} | {fmt(pnp, 1)} | {fmt(col + pnp, 1)} | "
                           f"{cap(K_C, np)} | {cap(K_P, np)} | {cap(K_C, np) + cap(K_P, np)} | {16 * math.sqrt(np):.1f} |")
    out += ["", "## Queues allocated in all, colpnp against perpeer (Fig. 10)", "",
            "| proxy | ranks | np | list | colpnp | col+list | list+pnp | perpeer | n |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for proxy in d.proxies:
        for scope, label in d.scopes(proxy):
            for np in d.nps:
                cells = [fmt(d.per_rank(proxy, np, b, "queues", scope), 1) for b in ["list"] + BACKENDS]
                out.append(f"| {proxy} | {label} | {np} | " + " | ".join(cells) + f" | {np} |")
    out.append("")
    return out


def overhead_tables(d):
    out = ["# Overhead over search time (Table 2)", "",
           "The engine's restructuring time (overhead_ns: pnp's partner extraction, col's level creation) over "
           "its search time (all searches), summed over ranks (the paper: average overhead across processes over "
           "average search time across processes); fds at rank 0 as well. Median over repetitions. The last "
           "columns: timed intervals left out for passing the cutoff (1 ms: a process descheduled inside), "
           "summed over ranks and repetitions, per backend run.", ""]
    names = ["colpnp", "col+list", "list+pnp"]
    out += ["| proxy | ranks | np | " + " | ".join(f"{b} overhead/search" for b in names) +
            " | colpnp overhead (ms) | colpnp search (ms) | outliers (all backends) |",
            "|---|---|---:|" + "---:|" * (len(names) + 3)]
    for proxy in d.proxies:
        for scope, label in d.scopes(proxy):
            for np in d.nps:
                cells = []
                for b in names:
                    ovh = d.summed(proxy, np, b, ["overhead_ns"], scope)
                    srch = d.summed(proxy, np, b, ["coll_search_ns", "p2p_search_ns"], scope)
                    cells.append(fmt(median([o / s for o, s in zip(ovh, srch) if s > 0]), 4))
                ovh = median(d.summed(proxy, np, "colpnp", ["overhead_ns"], scope)) / 1e6
                srch = median(d.summed(proxy, np, "colpnp", ["coll_search_ns", "p2p_search_ns"], scope)) / 1e6
                outl = sum(sum(d.summed(proxy, np, b, ["timer_outliers"], scope)) for b in ["list"] + BACKENDS)
                out.append(f"| {proxy} | {label} | {np} | " + " | ".join(cells) +
                           f" | {fmt(ovh, 3)} | {fmt(srch, 3)} | {outl} |")
    out.append("")
    return out


def gnuplot(script):
    subprocess.run(["gnuplot"], input=script, text=True, check=True)


def plot_speedups(d, outdir):
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#7f7f7f"]
    for proxy in d.proxies:
        scope = "rank0" if proxy == "fds" else "all"
        dat = os.path.join(outdir, f".speedup-{proxy}.dat")
        with open(dat, "w") as f:
            for q in QUEUES:
                for np in d.nps:
                    for c in CLASSES:
                        vals = [d.speedup(proxy, np, b, scope, q, c) for b in BACKENDS]
                        f.write(f'"{c} np{np}" ' + " ".join("NaN" if v != v else f"{v:.4f}" for v in vals) + "\n")
                f.write("\n\n")
        where = "rank 0" if scope == "rank0" else "all ranks"
        panels = []
        for i, q in enumerate(QUEUES):
            title = {"UMQ": "UMQ (receives search the unexpected queue)",
                     "PRQ": "PRQ (arrivals search the posted queue)", "both": "UMQ + PRQ"}[q]
            plots = ", ".join(
                f"'{dat}' index {i} using {j + 2}:xtic(1) title '{b}' lc rgb '{colors[j]}'"
                for j, b in enumerate(BACKENDS))
            panels.append(f"set title '{proxy}, {where}: {title}'\nplot {plots}\n")
        gnuplot(f"""set terminal pngcairo size 1500,1200 font ',10' noenhanced
set output '{os.path.join(outdir, f"speedup-{proxy}.png")}'
set multiplot layout 3,1
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y
set yrange [0.05:*]
set ylabel 'search time speedup over list'
set grid ytics
set key top left horizontal
set xtics rotate by -30
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1.5 lc rgb 'black' front
""" + "".join(panels) + "unset multiplot\n")
        os.remove(dat)


def plot_queues(d, outdir):
    dat = os.path.join(outdir, ".queues.dat")
    with open(dat, "w") as f:
        for proxy in d.proxies:
            scope = "rank0" if proxy == "fds" else "all"
            for np in d.nps:
                col = d.per_rank(proxy, np, "colpnp", "dedicated_coll_queues", scope)
                pnp = d.per_rank(proxy, np, "colpnp", "dedicated_p2p_queues", scope)
                total_c = d.per_rank(proxy, np, "colpnp", "queues", scope)
                total_p = d.per_rank(proxy, np, "perpeer", "queues", scope)
                f.write(f"{np} {col} {pnp} {col + pnp} {cap(K_C, np) + cap(K_P, np)} {cap(K_C, np)} "
                        f"{total_c} {total_p} {16 * math.sqrt(np)}\n")
            f.write("\n\n")
    common = f"""set logscale x 2
set logscale y
set xrange [{min(d.nps) / 1.25}:{max(d.nps) * 1.25}]
set xtics ({", ".join(str(n) for n in d.nps)})
set grid
set key bottom right
set xlabel 'processes n'
"""
    dedicated = []
    versus = []
    for i, proxy in enumerate(d.proxies):
        where = "rank 0" if proxy == "fds" else "mean over ranks"
        dedicated.append(
            f"set title '{proxy} ({where}): colpnp dedicated queues'\n"
            f"plot '{dat}' index {i} using 1:2 with linespoints lw 2 title 'COL (collective)', "
            f"'' index {i} using 1:3 with linespoints lw 2 title 'PNP (point-to-point)', "
            f"'' index {i} using 1:4 with linespoints lw 2 title 'COL + PNP', "
            f"'' index {i} using 1:5 with lines dt 2 lw 2 title 'cap floor(8 sqrt n) + floor(8 sqrt n)', "
            f"'' index {i} using 1:6 with lines dt 3 lw 2 title 'cap of each part floor(8 sqrt n)'\n")
        versus.append(
            f"set title '{proxy} ({where}): queues allocated'\n"
            f"plot '{dat}' index {i} using 1:7 with linespoints lw 2 title 'colpnp (6 fixed + dedicated)', "
            f"'' index {i} using 1:8 with linespoints lw 2 title 'perpeer (2n + 1)', "
            f"'' index {i} using 1:9 with lines dt 2 lw 2 title 'k sqrt(n), k = 16', "
            f"'' index {i} using 1:1 with lines dt 3 lw 2 title 'n'\n")
    for name, panels in (("dedicated-queues.png", dedicated), ("queues-vs-perpeer.png", versus)):
        gnuplot("set terminal pngcairo size 1400,900 font ',10' noenhanced\n"
                f"set output '{os.path.join(outdir, name)}'\nset multiplot layout 2,2\n" + common +
                "set ylabel 'queues'\n" + "".join(panels) + "unset multiplot\n")
    os.remove(dat)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    stats, outdir = sys.argv[1], sys.argv[2]
    d = Data(load(stats))
    if not d.runs:
        sys.exit(f"{stats}: no STATS lines")
    os.makedirs(outdir, exist_ok=True)
    tables = {
        "speedups.md": speedup_tables(d),
        "depth.md": depth_tables(d),
        "queues.md": queue_tables(d),
        "overhead.md": overhead_tables(d),
    }
    for name, lines in tables.items():
        with open(os.path.join(outdir, name), "w") as f:
            f.write("\n".join(lines) + "\n")
    with open(os.path.join(outdir, "README.md"), "w") as f:
        f.write("# Seed 000 measurements\n\nWritten by `bench/seed000/figures.py` from `stats.txt.gz`; the method, "
                "the command and the findings are in `../seed000.md`.\n\n"
                "- [speedups.md](speedups.md): search time speedup over list (Figs. 7-8)\n"
                "- [depth.md](depth.md): elements inspected per search\n"
                "- [queues.md](queues.md): queues allocated (Figs. 9-10)\n"
                "- [overhead.md](overhead.md): overhead over search time (Table 2)\n"
                "- PNGs: " + ", ".join(f"[speedup-{p}.png](speedup-{p}.png)" for p in d.proxies) +
                ", [dedicated-queues.png](dedicated-queues.png), [queues-vs-perpeer.png](queues-vs-perpeer.png)\n"
                "- [fds-summary.txt](fds-summary.txt): the fds numbers issue 4 asks to quote, as the script printed them\n"
                "- raw: `stats.txt.gz` (every rank's --stats line of every run), [runs.txt](runs.txt) (the command, "
                "the date, commit and components, and one line per run)\n")
    plot_speedups(d, outdir)
    plot_queues(d, outdir)
    # The numbers the issue asks to quote.
    if "fds" in d.proxies:
        for np in d.nps:
            s = d.speedup("fds", np, "colpnp", "rank0", "both", "all")
            col = d.per_rank("fds", np, "colpnp", "dedicated_coll_queues", "rank0")
            pnp = d.per_rank("fds", np, "colpnp", "dedicated_p2p_queues", "rank0")
            rs = d.ratios("fds", np, "colpnp", "rank0", "both", "all")
            print(f"fds np {np}: colpnp/list search time speedup at rank 0 {fmt(s)}x "
                  f"(repetitions {', '.join(fmt(r) for r in rs)}; "
                  f"collective {fmt(d.speedup('fds', np, 'colpnp', 'rank0', 'both', 'coll'))}x, "
                  f"point-to-point {fmt(d.speedup('fds', np, 'colpnp', 'rank0', 'both', 'p2p'))}x); "
                  f"dedicated queues at rank 0 {fmt(col + pnp, 0)} (COL {fmt(col, 0)}, PNP {fmt(pnp, 0)}) "
                  f"of cap {cap(K_C, np) + cap(K_P, np)} (16 sqrt(n) = {16 * math.sqrt(np):.1f})")


if __name__ == "__main__":
    main()
