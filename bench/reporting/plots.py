"""bench/reporting/plots.py — the PNG plots: Handoff and RemoteAcquire against ranks,
CsSweep against the critical section's length.

Marker = mean, bar = p50..p99 of the same samples, the floor drawn dashed, hollow
markers on a shaded band where a point is oversubscribed, and a '!' on every point
below its floor with the reason (below_floor_reason) written under the plot.
"""
import math
import os
import re
import sys

from .rows import KIND_ORDER, InputError, oversubscribed
from .summary import metric_value

RMA_KINDS = ("win_lock", "rma_mcs", "fetch_and_op")


def below_floor_reason(row, metric, ratio):
    """Why a lock's figure (ratio x its floor) may be below the message floor, or
    None if nothing explains it."""
    if metric == "all entries" and (row.get("handoff_share", math.nan) < 0.99
                                    or row.get("msgs_per_entry", math.nan) < 1.0):
        return (f"{row['kind']}: re-entries by the same rank need no message "
                "(this figure counts all entries)")
    if row["kind"] in RMA_KINDS and "shm" in row["transport"] and row["nodes"] == 1:
        return f"{row['kind']}: osc/sm atomics are loads and stores on shared memory, no message"
    if row["kind"] == "tally_node" and (row["nodes"] == 1 or row["ranks"] > row["nodes"]):
        return "tally_node: hands over inside a node through shared memory, no message"
    if row["kind"] == "lock_server" and metric != "remote acquire":
        return "lock_server: rank 0 is the server and enters without a message"
    if ratio >= 0.85:
        return f"{row['kind']}: within the run's spread (≥ 0.85 x the floor, itself a median)"
    if oversubscribed(row):
        return (f"{row['kind']}: oversubscribed, where the floor's and the lock's waits are "
                "the scheduler's more than the transport's")
    return None


def plot(rows, outdir):
    """Writes the plots into outdir; returns their paths. InputError without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401  (pyplot is used through matplotlib.pyplot)
    except ImportError:
        raise InputError(f"matplotlib is missing from {sys.executable}: install Debian's "
                         "python3-matplotlib, or run bench/report with a python3 that has it "
                         "(the scripts pick one themselves, or take $TALLY_PYTHON)") from None
    os.makedirs(outdir, exist_ok=True)
    f = _Figures(rows, outdir)
    f.vs_ranks("Handoff",
               [("all entries", "all entries", "sample_mean_ns", "p50_ns", "p99_ns"),
                ("handoffs only", "handoff", "handoff_ns", "handoff_p50_ns", "handoff_p99_ns")],
               1, "µs per entry", "handoff_vs_ranks.png")
    f.vs_ranks("RemoteAcquire",
               [("turns away from rank 0", "remote acquire", "sample_mean_ns", "p50_ns", "p99_ns")],
               2, "lock() latency (µs)", "remote_acquire_vs_ranks.png")
    for t in f.transports:
        f.cs_sweep(t)
    return f.written


class _Figures:
    """The plots of one report: the rows, their transports and lock kinds (one colour
    each), and the paths written so far."""

    def __init__(self, rows, outdir):
        import matplotlib.pyplot as plt
        self.plt = plt
        self.outdir = outdir
        self.ok = [r for r in rows if not r["error"]]
        self.transports = sorted({r["transport"] for r in self.ok})
        self.kinds = sorted({r["kind"] for r in self.ok if r["kind"] != "floor"},
                            key=lambda k: KIND_ORDER.index(k) if k in KIND_ORDER else len(KIND_ORDER))
        self.colors = {k: f"C{i % 10}" for i, k in enumerate(self.kinds)}
        self.written = []

    def floor_at(self, transport, ranks):
        """The one-way floor's median, the reference of tally_bench's ratios."""
        v = [r["p50_ns"] for r in self.ok if r["bench"] == "Floor" and r["transport"] == transport
             and r["ranks"] == ranks and not math.isnan(r["p50_ns"])]
        return v[0] if v else None

    @staticmethod
    def us_axis(ax, lo, hi):
        """Log scale when the values span more than a decade, with enough labelled
        ticks either way; values in µs."""
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
        if lo > 0 and hi / lo > 10:
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_minor_formatter(NullFormatter())
            ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
        else:
            ax.set_ylim(bottom=0, top=hi * 1.15)

    def draw(self, ax, pts, kind, dodge):
        """pts: (x, mean, p50, p99, oversubscribed, flag). Mean marker, p50..p99 bar,
        hollow when oversubscribed, '!' next to a point below its floor."""
        c = self.colors[kind]
        xs = [x * (1 + dodge) for x, *_ in pts]
        ax.plot(xs, [m for _, m, *_ in pts], color=c, lw=1.2, zorder=2)
        for x, (_, m, p50, p99, over, flag) in zip(xs, pts):
            if not math.isnan(p50) and not math.isnan(p99):
                ax.vlines(x, min(p50, p99), max(p50, p99), color=c, lw=2.5, alpha=0.45, zorder=1)
            ax.plot([x], [m], marker="o", ms=6, color=c, zorder=3,
                    markerfacecolor="white" if over else c)
            if flag:
                ax.annotate("!", (x, m), xytext=(4, 2), textcoords="offset points", color=c,
                            fontsize=10, fontweight="bold")

    def points(self, ax, kinds_at, x_of, ref_of, metric, key, dodge_step, notes, vals):
        """Draws each kind's rows (kinds_at(kind) gives them in x order) and collects
        their values into vals and the reasons of points below ref_of(row) into notes.
        key(row) gives (mean, p50, p99) in ns, mean NaN to skip a row."""
        for i, kind in enumerate(self.kinds):
            pts = []
            for r in kinds_at(kind):
                m, p50, p99 = key(r)
                if math.isnan(m):
                    continue
                ref = ref_of(r)
                flag = ref is not None and m < ref
                if flag:
                    notes.append(below_floor_reason(r, metric, m / ref) or
                                 f"{kind}: not explained (read the table)")
                pts.append((x_of(r), m / 1e3, p50 / 1e3, p99 / 1e3, oversubscribed(r), flag))
            if pts:
                self.draw(ax, pts, kind, dodge_step * (i - (len(self.kinds) - 1) / 2))
                vals += [v for p in pts for v in p[1:4] if not math.isnan(v)]

    def finish(self, fig, axes, notes, floor_label, name):
        """The legend and the notes under the plot; saves it as name."""
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
        handles = [Line2D([], [], color=self.colors[k], marker="o", label=k) for k in self.kinds
                   if any(ln.get_color() == self.colors[k] for ax in axes for ln in ax.get_lines())]
        handles += [Line2D([], [], color="k", ls="--", label=floor_label),
                    Line2D([], [], color="grey", marker="o", ls="", label="mean"),
                    Line2D([], [], color="grey", lw=2.5, alpha=0.45, label="p50..p99 (same samples)"),
                    Line2D([], [], color="grey", marker="o", markerfacecolor="white", ls="",
                           label="oversubscribed (ranks > cores)"),
                    Patch(color="grey", alpha=0.12, label="oversubscribed region")]
        lines = sorted(set(notes))
        text = "\n".join(["! below the floor: " + n for n in lines]) if lines else ""
        ncol = 5
        legend_rows = (len(handles) + ncol - 1) // ncol
        bottom_in = 0.3 + 0.22 * legend_rows + 0.17 * len(lines)
        height = fig.get_figheight() + bottom_in
        fig.set_figheight(height)
        fig.legend(handles=handles, loc="lower center", ncol=ncol, fontsize=8, frameon=False,
                   bbox_to_anchor=(0.5, 0.17 * len(lines) / height + 0.01))
        if text:
            fig.text(0.01, 0.01, text, fontsize=7.5, va="bottom", ha="left")
        fig.tight_layout(rect=(0, bottom_in / height, 1, 1))
        path = os.path.join(self.outdir, name)
        fig.savefig(path, dpi=110)
        self.plt.close(fig)
        self.written.append(path)

    def shade_oversubscribed(self, ax, t, ranks):
        over = [n for n in ranks if any(oversubscribed(r) for r in self.ok
                                        if r["transport"] == t and r["ranks"] == n)]
        if over:
            lo = min(over)
            under = [n for n in ranks if n < lo]
            left = (max(under) * lo) ** 0.5 if under else lo * 0.8
            ax.axvspan(left, max(ranks) * 1.25, color="grey", alpha=0.12, zorder=0)

    def vs_ranks(self, bench, panels, factor, ylabel, name):
        """One benchmark against ranks. panels: (title, metric, mean key, p50 key, p99 key)."""
        if not any(r["bench"] == bench for r in self.ok):
            return
        # A row per transport, a column per panel; one panel: the transports side by side.
        nt = len(self.transports)
        nrow, ncol = (nt, len(panels)) if len(panels) > 1 else (1, nt)
        fig, axes = self.plt.subplots(nrow, ncol, figsize=(max(5.6 * ncol, 11), 3.9 * nrow),
                                      squeeze=False)
        grid = axes if len(panels) > 1 else axes.reshape(nt, 1)
        notes = []
        for row_axes, t in zip(grid, self.transports):
            ranks = sorted({r["ranks"] for r in self.ok if r["transport"] == t})
            for ax, panel in zip(row_axes, panels):
                self.ranks_panel(ax, bench, panel, factor, ylabel, t, ranks, notes)
        self.finish(fig, [ax for row in axes for ax in row], notes,
                    f"floor median ({'one-way' if factor == 1 else 'round trip'})", name)

    def ranks_panel(self, ax, bench, panel, factor, ylabel, t, ranks, notes):
        title, metric, kmean, kp50, kp99 = panel

        def kinds_at(kind):
            return sorted((r for r in self.ok if r["bench"] == bench and r["kind"] == kind
                           and r["transport"] == t and not r["args"]), key=lambda r: r["ranks"])

        def key(r):
            m = r.get(kmean, math.nan)
            if math.isnan(m) and metric != "handoff":
                m = metric_value(r, metric)
            # handoffs only: none without one clock (several nodes)
            return m, r.get(kp50, math.nan), r.get(kp99, math.nan)

        def ref_of(r):
            f = self.floor_at(t, r["ranks"])
            return factor * f if f is not None else None

        vals = []
        self.points(ax, kinds_at, lambda r: r["ranks"], ref_of, metric, key, 0.025, notes, vals)
        if metric == "handoff" and not vals:
            ax.text(0.5, 0.5, "not measured: across nodes there is no one clock\n"
                    "to tell handoffs from re-entries", transform=ax.transAxes,
                    ha="center", va="center", fontsize=9, color="grey")
        fl = [(n, factor * self.floor_at(t, n) / 1e3) for n in ranks if self.floor_at(t, n)]
        if fl:
            ax.plot(*zip(*fl), "k--", marker="s", ms=4, zorder=2)
            vals += [v for _, v in fl]
        self.shade_oversubscribed(ax, t, ranks)
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranks)
        ax.set_xticklabels([str(n) for n in ranks])
        ax.set_xlim(min(ranks) * 0.8, max(ranks) * 1.25)
        if vals:
            self.us_axis(ax, min(vals), max(vals))
        ax.set_title(f"{bench}, {title} — {t}", fontsize=10)
        ax.set_xlabel("ranks")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="major", alpha=0.3)

    def cs_sweep(self, t):
        """CsSweep (think 0) on transport t, a panel per rank count."""
        sweep = [r for r in self.ok if r["bench"] == "CsSweep" and r["transport"] == t
                 and dict(r["args"]).get("think_ns") == "0"]
        ranks = sorted({r["ranks"] for r in sweep})
        if not ranks:
            return
        fig, axes = self.plt.subplots(1, len(ranks), figsize=(max(5.6 * len(ranks), 11), 4.2),
                                      squeeze=False)
        notes = []
        for ax, n in zip(axes[0], ranks):
            here = [r for r in sweep if r["ranks"] == n]
            self.sweep_panel(ax, t, n, here, notes)
        slug = re.sub(r"[^a-z0-9]+", "-", t.lower()).strip("-")  # "shm (MPICH)" -> shm-mpich
        self.finish(fig, list(axes[0]), notes, "critical section + floor median (one-way)",
                    f"cs_sweep_{slug}.png")

    def sweep_panel(self, ax, t, n, here, notes):
        f = self.floor_at(t, n)

        def cs(r):
            return int(dict(r["args"])["cs_ns"])

        def key(r):
            m = r["sample_mean_ns"] if not math.isnan(r["sample_mean_ns"]) else r["mean"]
            return m, r["p50_ns"], r["p99_ns"]

        vals = []
        self.points(ax, lambda kind: sorted((r for r in here if r["kind"] == kind), key=cs),
                    lambda r: cs(r) / 1e3 + 1, lambda r: cs(r) + f if f is not None else None,
                    "all entries", key, 0.02, notes, vals)
        xs = sorted({cs(r) for r in here})
        if f:
            ax.plot([x / 1e3 + 1 for x in xs], [(x + f) / 1e3 for x in xs], "k--", marker="s", ms=4)
        over = any(oversubscribed(r) for r in here)
        if over:
            ax.set_facecolor((0.5, 0.5, 0.5, 0.12))
        ax.set_xscale("log")
        ax.set_xticks([x / 1e3 + 1 for x in xs])
        ax.set_xticklabels([f"{x / 1e3:g}" for x in xs])
        if vals:
            self.us_axis(ax, min(vals), max(vals))
        ax.set_title(f"CsSweep (think 0), all entries — {t}, {n} ranks"
                     f"{' (oversubscribed)' if over else ''}", fontsize=10)
        ax.set_xlabel("critical section (µs)")
        ax.set_ylabel("µs per entry")
        ax.grid(True, which="major", alpha=0.3)
