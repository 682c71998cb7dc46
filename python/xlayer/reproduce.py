"""The documents' experiments, one command each: ``xlayer reproduce``.

Each :class:`Experiment` names a figure or table of a source document, the sweep that measures
it (a shipped scenario under the stacks the document compares, over seeds; ``quick`` is a
smaller version for a laptop), the document's claims about it, and the figure drawn in the
document's form. A claim is judged on the sweep's results by a stated criterion — the claim's
direction and rough size, never a bound fitted to xlayer's own output — and reported as
*holds* or *does not hold* beside the measured figure, so a claim xlayer does not reproduce
stays visible as such.

    xlayer reproduce --list
    xlayer reproduce clap-1hop --quick
    xlayer reproduce dpclo-fig5a --out results/repro-fig5a --workers 2

Runs go through :func:`xlayer.sweep` (on Dask; a finished folder is reused and a partial one
resumed); the claims are written to ``claims.json`` in the sweep folder and the figure to
``<name>.png``, each atomically.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

PathLike = Union[str, Path]


@dataclass(frozen=True)
class Verdict:
    """A claim judged on measured results."""

    claim: str
    criterion: str
    measured: str
    holds: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "holds", bool(self.holds))  # numpy's bool_ is not JSON

    def as_dict(self) -> Dict[str, Any]:
        return {"claim": self.claim, "criterion": self.criterion, "measured": self.measured,
                "holds": bool(self.holds)}


@dataclass(frozen=True)
class Experiment:
    """A document's figure or table, the sweep that measures it and the claims it makes."""

    name: str
    document: str
    title: str
    scenario: str
    stacks: Dict[str, Dict[str, Any]]
    seeds: Tuple[int, int]  # (full, quick)
    overrides: Dict[str, Any] = field(default_factory=dict)
    quick_overrides: Dict[str, Any] = field(default_factory=dict)
    grid: Dict[str, List[Any]] = field(default_factory=dict)
    quick_grid: Optional[Dict[str, List[Any]]] = None
    judge: Callable[["Measured"], List[Verdict]] = field(default=lambda m: [], repr=False)
    draw: Optional[Callable[["Measured", Any], None]] = field(default=None, repr=False)

    def sweep_spec(self, quick: bool = False) -> Dict[str, Any]:
        """The sweep (a dict of a sweep file's shape) that measures this experiment."""
        overrides = dict(self.overrides)
        if quick:
            overrides.update(self.quick_overrides)
        grid = self.quick_grid if quick and self.quick_grid is not None else self.grid
        spec: Dict[str, Any] = {
            "name": f"repro-{self.name}" + ("-quick" if quick else ""),
            "scenario": str(scenario_path(self.scenario)),
            "seeds": self.seeds[1] if quick else self.seeds[0],
            "stacks": {k: dict(v) for k, v in self.stacks.items()},
            "overrides": overrides,
        }
        if grid:
            spec["grid"] = {k: list(v) for k, v in grid.items()}
        return spec

    def run_count(self, quick: bool = False) -> int:
        grid = self.quick_grid if quick and self.quick_grid is not None else self.grid
        points = 1
        for values in grid.values():
            points *= len(values)
        return points * len(self.stacks) * (self.seeds[1] if quick else self.seeds[0])


def scenario_path(name: str) -> Path:
    """A shipped scenario by name, from ``scenarios/`` of the working directory or of the
    source checkout this package was built from (the scenarios are not inside the wheel)."""
    for folder in [Path.cwd() / "scenarios"] + _checkout_folders():
        p = folder / f"{name}.toml"
        if p.is_file():
            return p
    raise FileNotFoundError(
        f"the shipped scenario {name}.toml was not found in ./scenarios: run xlayer reproduce "
        "from a checkout of the xlayer repository (the scenarios are not installed with the "
        "package)")


def _checkout_folders() -> List[Path]:
    """``scenarios/`` of the source tree this module lies in, when it is one (an editable
    install or a checkout on ``PYTHONPATH``)."""
    return [p / "scenarios" for p in Path(__file__).resolve().parents[1:4]]


class Measured:
    """An experiment's finished runs, with the per-flow figures the claims read."""

    def __init__(self, sweep: Any):
        self.sweep = sweep
        runs = sweep.ok
        if len(runs) == 0:
            raise ValueError("no run of the sweep finished")
        self.runs = runs
        self.flows = sweep.flows[sweep.flows["run"].isin(runs["run"])]
        self.seeds = sorted(int(s) for s in runs["seed"].unique())

    def rates(self, stack: str, where: Optional[Dict[str, Any]] = None) -> Dict[int, List[float]]:
        """Each seed's flow throughputs (bit/s, in flow order) under ``stack``."""
        f = self.flows[self.flows["stack"] == stack]
        for k, v in (where or {}).items():
            f = f[f[k] == v]
        out: Dict[int, List[float]] = {}
        for seed, g in f.groupby("seed"):
            out[int(seed)] = [float(x) for x in g.sort_values("flow")["throughput_bps"]]
        return out

    def summary(self, stack: str, key: str, where: Optional[Dict[str, Any]] = None) -> List[float]:
        """A summary key of each run of ``stack`` (seed order)."""
        r = self.runs[self.runs["stack"] == stack]
        for k, v in (where or {}).items():
            r = r[r[k] == v]
        return [float(x) for x in r.sort_values("seed")[key]]


    def capture(self, stack: str, after_s: float) -> List[float]:
        """Each seed's share of 1-s bins (from ``after_s``) in which one of the first two flows
        gets less than half of the other while they carry traffic (the run's timeseries.csv:
        the scenario must set ``output.timeseries_bin_s``)."""
        import pandas as pd  # type: ignore[import-untyped]

        out = []
        for run in self.runs[self.runs["stack"] == stack].sort_values("seed")["run"]:
            ts = pd.read_csv(Path(self.sweep.folder) / "runs" / str(run) / "timeseries.csv")
            ts = ts[ts["t_s"] >= after_s]
            wide = ts.pivot_table(index="t_s", columns="flow", values="throughput_bps")
            a, b = wide[0], wide[1]
            busy = (a + b) > 0
            lopsided = busy & ((a < 0.5 * b) | (b < 0.5 * a))
            out.append(float(lopsided.sum() / max(1, busy.sum())))
        return out


def jain(x: Sequence[float]) -> float:
    s, q = sum(x), sum(v * v for v in x)
    return s * s / (len(x) * q) if q > 0 else 0.0


def mean(x: Sequence[float]) -> float:
    return statistics.fmean(x) if len(x) else math.nan


def _kbps(x: float) -> str:
    return f"{x / 1e3:.0f} kbit/s"


def _per_seed(values: Sequence[float], fmt: str = "{:.2f}") -> str:
    return " / ".join(fmt.format(v) for v in values)


# --- the experiments ------------------------------------------------------------------------


def _judge_diffq_fig2(m: Measured) -> List[Verdict]:
    tcp = m.rates("tcp-sack")
    starve = [r[0] / mean(r[1:]) for r in tcp.values() if mean(r[1:]) > 0]
    out = [Verdict(
        "Under TCP-SACK the 3-hop flow starves once the two 1-hop flows start beside its first "
        "relay (DiffQ Fig. 2)",
        "mean over seeds of the 3-hop flow's throughput below 20 % of the 1-hop flows' mean",
        f"{mean(starve):.1%} (per seed {_per_seed(starve, '{:.1%}')})",
        mean(starve) < 0.2)]
    j_tcp = mean([jain(r) for r in tcp.values()])
    for stack in ("diffq-tcp", "diffq-udp"):
        j = [jain(r) for r in m.rates(stack).values()]
        out.append(Verdict(
            f"{stack.upper().replace('DIFFQ', 'DiffQ')} keeps the three flows' shares fair "
            "(DiffQ Fig. 10)",
            "mean Jain index of the three flows at least 0.8 and above TCP-SACK's",
            f"Jain {mean(j):.2f} (per seed {_per_seed(j)}) against TCP-SACK's {j_tcp:.2f}",
            mean(j) >= 0.8 and mean(j) > j_tcp))
    return out


def _bars(m: Measured, ax: Any, labels: Sequence[str], ylabel: str = "throughput (kbit/s)",
          rates: Optional[Callable[[Measured, str], Dict[int, List[float]]]] = None) -> None:
    """Grouped bars: each flow's mean rate over seeds (``rates``, default the throughput), one
    group per stack."""
    import numpy as np

    stacks = list(m.sweep.stacks)
    width = 0.8 / max(1, len(labels))
    for i, label in enumerate(labels):
        vals = []
        for s in stacks:
            by_seed = rates(m, s) if rates is not None else m.rates(s)
            per_seed = [r[i] for r in by_seed.values() if len(r) > i]
            vals.append(mean(per_seed) / 1e3 if per_seed else 0.0)
        ax.bar(np.arange(len(stacks)) + i * width, vals, width, label=label)
    ax.set_xticks(np.arange(len(stacks)) + width * (len(labels) - 1) / 2)
    ax.set_xticklabels(stacks)
    ax.set_ylabel(ylabel)
    ax.legend()


def _judge_fig4(m: Measured) -> List[Verdict]:
    with_, without = m.rates("etx"), m.rates("no-etx")
    seeds = sorted(set(with_) & set(without))
    a = [sum(with_[s][:2]) for s in seeds]
    b = [sum(without[s][:2]) for s in seeds]
    ahead = sum(x > y for x, y in zip(a, b))
    flows = [(mean([with_[s][i] for s in seeds]), mean([without[s][i] for s in seeds]))
             for i in range(2)]
    return [Verdict(
        "With ETX (routing and eq. 7) DPCLO-ZMAC+ gets more throughput over links losing "
        "U[0, 0.6] of their frames than without (DPCLO Fig. 4)",
        "mean aggregate over the loss draws higher with ETX, and higher on most draws",
        f"{_kbps(mean(a))} against {_kbps(mean(b))} ({mean(a) / mean(b):.2f}×), ahead on "
        f"{ahead} of {len(seeds)}; A→E {_kbps(flows[0][0])} against {_kbps(flows[0][1])}, "
        f"D→F {_kbps(flows[1][0])} against {_kbps(flows[1][1])}" if mean(b) > 0 else "no throughput",
        mean(a) > mean(b) and ahead > len(seeds) / 2)]


def _fig5_pairs(m: Measured) -> Tuple[List[List[float]], List[List[float]], List[float], List[float]]:
    z, e = m.rates("dpclo-zmacplus"), m.rates("dpclo-80211e")
    return (list(z.values()), list(e.values()), m.capture("dpclo-zmacplus", 20.0),
            m.capture("dpclo-80211e", 20.0))


def _judge_fig5d(m: Measured) -> List[Verdict]:
    z, e, zc, ec = _fig5_pairs(m)
    jz, je = [jain(r[:2]) for r in z], [jain(r[:2]) for r in e]
    return [
        Verdict("On topology (D) ZMAC+ gives both flows the same throughput (DPCLO Fig. 5 E)",
                "Jain's index above 0.95 and capture (a flow below half the other in a 1-s bin) "
                "in at most 10 % of the bins, on every seed",
                f"Jain {_per_seed(jz, '{:.3f}')}, capture {_per_seed(zc)}",
                all(j > 0.95 for j in jz) and all(c <= 0.1 for c in zc)),
        Verdict("Over 802.11e each flow captures the channel for significant periods of time "
                "(DPCLO Fig. 5 F)",
                "capture in at least a quarter of the 1-s bins (mean over seeds)",
                f"{mean(ec):.2f} (per seed {_per_seed(ec)})", mean(ec) >= 0.25),
        Verdict("... eventually they relegate access to the other flow, resulting in long-term "
                "fairness (DPCLO Fig. 5 F)",
                "mean Jain's index over the measured 100 s at least 0.9",
                f"{mean(je):.2f} (per seed {_per_seed(je)})", mean(je) >= 0.9),
    ]


def _judge_fig5g(m: Measured) -> List[Verdict]:
    z, e, _, ec = _fig5_pairs(m)
    jz = [jain(r[:2]) for r in z]
    az, ae = mean([sum(r[:2]) for r in z]), mean([sum(r[:2]) for r in e])
    return [
        Verdict("On topology (G) ZMAC+ gives both flows the same throughput (DPCLO Fig. 5 H)",
                "Jain's index above 0.95 on every seed", f"Jain {_per_seed(jz, '{:.3f}')}",
                all(j > 0.95 for j in jz)),
        Verdict("802.11e (with RTS/CTS) shows better aggregate throughput than ZMAC+ "
                "(DPCLO Fig. 5 I)",
                "mean aggregate higher over 802.11e",
                f"{_kbps(ae)} against {_kbps(az)} ({ae / az:.2f}×)" if az > 0 else "no throughput",
                ae > az),
        Verdict("RTS/CTS synchronizes A and C and prevents capture (DPCLO Fig. 5 I)",
                "capture (a flow below half the other in a 1-s bin) in at most 10 % of the bins",
                f"{mean(ec):.2f} (per seed {_per_seed(ec)})", mean(ec) <= 0.1),
    ]


def _judge_fig5a(m: Measured) -> List[Verdict]:
    def splits(stack: str) -> List[float]:
        out = []
        for a, c in (r[:2] for r in m.rates(stack).values()):
            out.append(0.0 if a <= 0 or c <= 0 else min(a / c, c / a))
        return out

    e, z = splits("dpclo-80211e"), splits("dpclo-zmacplus")
    a_lower = sum(r[0] < r[1] for r in m.rates("dpclo-80211e").values())
    me, mz = statistics.median(e), statistics.median(z)
    closer = sum(zs > es for zs, es in zip(z, e))
    return [
        Verdict("Over CSMA (802.11e) one flow of the asymmetric pair starves long-term "
                "(DPCLO Fig. 5 B)",
                "median over seeds of min(a/c, c/a) below 0.1 (one flow under a tenth of the other)",
                f"{me:.3f} (per seed {_per_seed(e, '{:.3f}')}); A→B the lower on {a_lower} "
                f"of {len(e)}", me < 0.1),
        Verdict("Over ZMAC+ the ratio of the two throughputs is much closer to 1 (DPCLO Fig. 5 C)",
                "median min(a/c, c/a) above 0.25 and ZMAC+ the more even on at least 80 % of seeds",
                f"{mz:.3f} (per seed {_per_seed(z, '{:.3f}')}); more even on {closer} of {len(z)}",
                mz > 0.25 and closer >= 0.8 * len(z)),
    ]


def _judge_fig3(m: Measured) -> List[Verdict]:
    out = []
    for mac in ("zmacplus", "80211e"):
        single = [jain(r[:2]) for r in m.rates(f"single-{mac}").values()]
        multi = [jain(r[:2]) for r in m.rates(f"multi-{mac}").values()]
        wins = sum(b > a for a, b in zip(single, multi))
        out.append(Verdict(
            f"Multi-path DPCLO (adaptive K) shares the two flows more fairly than single-path "
            f"(DPCLO Fig. 3, {'ZMAC+' if mac == 'zmacplus' else '802.11e'})",
            "Jain's index higher with multi-path on every seed",
            f"single {_per_seed(single)} → multi {_per_seed(multi)}",
            wins == len(single) and len(single) > 0))
    for mac in ("zmacplus", "80211e"):
        name = "ZMAC+" if mac == "zmacplus" else "802.11e"
        one, many = m.rates(f"single-{mac}"), m.rates(f"multi-{mac}")
        agg_s = mean([sum(r[:2]) for r in one.values()])
        agg_m = mean([sum(r[:2]) for r in many.values()])
        d_s = mean([r[1] for r in one.values()])
        d_m = mean([r[1] for r in many.values()])
        out.append(Verdict(
            f"Sending A's flow also over A-B-C-E unloads D, whose own flow D→F gains, at about "
            f"half the aggregate ({name})",
            "D→F's mean throughput higher with multi-path, and the aggregate below 3/4 of "
            "single-path's",
            f"D→F {_kbps(d_s)} → {_kbps(d_m)}; aggregate {_kbps(agg_s)} → {_kbps(agg_m)} "
            f"({agg_m / agg_s:.2f}×)" if agg_s > 0 else "no single-path throughput",
            d_m > d_s and agg_s > 0 and agg_m < 0.75 * agg_s))
    return out


def _transfer_rates(m: Measured, stack: str) -> Dict[int, List[float]]:
    """Each seed's per-flow transfer rates (bit/s): a finished file's size over its completion
    time; an unfinished one's delivered bits over the run (its throughput)."""
    f = m.flows[m.flows["stack"] == stack]
    out: Dict[int, List[float]] = {}
    for seed, g in f.groupby("seed"):
        rates = []
        for row in g.sort_values("flow").itertuples(index=False):
            done = float(getattr(row, "completion_s"))
            size = float(getattr(row, "app_bytes"))
            rates.append(8 * size / done if math.isfinite(done) and done > 0
                         else float(getattr(row, "throughput_bps")))
        out[int(seed)] = rates
    return out


def _clap_judge(ratio_claimed: float, slides: str, jain_too: bool = False) -> Callable[[Measured], List[Verdict]]:
    def judge(m: Measured) -> List[Verdict]:
        clap, tcp = _transfer_rates(m, "clap"), _transfer_rates(m, "tcp-sack")
        ratios = [sum(clap[s]) / sum(tcp[s]) if sum(tcp[s]) > 0 else math.inf
                  for s in clap if s in tcp]
        r = mean(ratios)
        out = [Verdict(
            f"CLAP's goodput {ratio_claimed:g}× TCP-SACK's ({slides})",
            f"at least {ratio_claimed / 2:g}× (half the slides' factor: the rough size)",
            f"{r:.2f}× (per seed {_per_seed(ratios, '{:.2f}')}); CLAP "
            f"{_kbps(mean([sum(v) for v in clap.values()]))}, TCP-SACK "
            f"{_kbps(mean([sum(v) for v in tcp.values()]))}",
            r >= ratio_claimed / 2)]
        if jain_too:
            j = [jain(v) for v in clap.values()]
            out.append(Verdict("CLAP shares the channel fairly among its flows (CLAP slides)",
                               "Jain's index of CLAP's flows above 0.95",
                               f"{mean(j):.3f}", mean(j) > 0.95))
        return out
    return judge


def _judge_more_path(m: Measured) -> List[Verdict]:
    more = [r[0] for r in m.rates("more").values()]
    single = [r[0] for r in m.rates("single-path").values()]
    ratio = mean(more) / mean(single) if mean(single) > 0 else math.inf
    return [Verdict(
        "MORE's coded opportunistic forwarding beats single-path routing with link ACKs on a "
        "lossy multi-hop path (MORE's premise, the DiffQ document's §6.2)",
        "MORE's mean throughput above single-path's, and ahead on every seed",
        f"{ratio:.2f}× ({_per_seed([x / 1e3 for x in more], '{:.0f}')} against "
        f"{_per_seed([x / 1e3 for x in single], '{:.0f}')} kbit/s)",
        ratio > 1.0 and all(a > b for a, b in zip(more, single)))]


STARVED_BPS = 1.0  # a flow that delivered nothing in its window (validation/more_scale.py)


def _judge_more_scale(m: Measured) -> List[Verdict]:
    counts = sorted(int(c) for c in m.runs["flows_random.count"].unique())

    def starved(stack: str, n: int) -> float:
        f = m.flows[(m.flows["stack"] == stack) & (m.flows["flows_random.count"] == n)]
        return float((f["throughput_bps"] < STARVED_BPS).mean()) if len(f) else math.nan

    def agg(stack: str) -> List[float]:
        return [mean(m.summary(stack, "aggregate_throughput_bps", {"flows_random.count": n}))
                for n in counts]

    def median(stack: str) -> float:
        f = m.flows[(m.flows["stack"] == stack) & (m.flows["flows_random.count"] == counts[-1])]
        return float(f["throughput_bps"].median())

    top = counts[-1]
    more = [starved("more", n) for n in counts]
    dq = starved("diffq-more", top)
    return [
        Verdict("Without congestion control MORE starves more flows as flows are added, "
                "about half at 32 (DiffQ §2 Fig. 1, §6.2)",
                f"the starved share rises from {counts[0]} to {top} flows and is at least 0.4 at {top}",
                "starved share " + " / ".join(f"{s:.2f}" for s in more) + " at "
                + " / ".join(str(n) for n in counts) + " flows",
                more[-1] > more[0] and more[-1] >= 0.4),
        Verdict(f"DiffQ-MORE starves fewer flows than MORE at {top} flows "
                "(the document: 18 % against almost 50 %)",
                "DiffQ-MORE's starved share at most three quarters of MORE's",
                f"{dq:.2f} against {more[-1]:.2f}", dq <= 0.75 * more[-1]),
        Verdict("MORE's aggregate throughput substantially reduces as flows are added "
                "(DiffQ §2, Fig. 1)",
                f"the mean aggregate at {top} flows at most half that at {counts[0]}",
                "aggregate " + " / ".join(f"{a / 1e3:.0f}" for a in agg("more"))
                + " kbit/s at " + " / ".join(str(n) for n in counts) + " flows",
                agg("more")[-1] <= 0.5 * agg("more")[0]),
        Verdict(f"DiffQ improves MORE by 2 to 3 times under {top} flows (DiffQ §1), read as "
                "the aggregate",
                f"DiffQ-MORE's mean aggregate at {top} flows at least 1.5× MORE's",
                f"{agg('diffq-more')[-1] / 1e3:.0f} against {agg('more')[-1] / 1e3:.0f} kbit/s",
                agg("diffq-more")[-1] >= 1.5 * agg("more")[-1]),
        Verdict(f"DiffQ improves MORE by 2 to 3 times under {top} flows (DiffQ §1), read as "
                "the median flow (Figs. 6-7's CDFs)",
                f"DiffQ-MORE's median flow at {top} flows at least 1.5× MORE's",
                f"{median('diffq-more') / 1e3:.1f} against {median('more') / 1e3:.1f} kbit/s",
                median("diffq-more") >= 1.5 * median("more")),
    ]


def _starved(rates: Sequence[float]) -> int:
    """Flows below a tenth of the stack's best flow in the same run."""
    best = max(rates) if rates else 0.0
    return sum(r < 0.1 * best for r in rates)


def _judge_fig6(m: Measured) -> List[Verdict]:
    def per_flow(stack: str, key: str) -> List[List[float]]:
        f = m.flows[m.flows["stack"] == stack]
        return [[float(x) for x in g.sort_values("flow")[key]] for _, g in f.groupby("seed")]

    rates = {s: per_flow(s, "throughput_bps") for s in m.sweep.stacks}
    delays = {s: per_flow(s, "delay_mean_s") for s in m.sweep.stacks}
    agg = {s: mean([sum(r) for r in v]) for s, v in rates.items()}
    starved = {s: mean([_starved(r) for r in v]) for s, v in rates.items()}
    # Far (the three farthest sources, 5-7 hops) over the nearest source, per seed.
    bias = {s: mean([mean(r[:3]) / r[-1] if r[-1] > 0 else 0.0 for r in v])
            for s, v in rates.items()}
    # Flows that delivered nothing have no delay (NaN): the worst is over those that did.
    worst = {s: mean([max((x for x in d if math.isfinite(x)), default=math.nan) for d in v])
             for s, v in delays.items()}
    silent = {s: mean([sum(not math.isfinite(x) for x in d) for d in v])
              for s, v in delays.items()}
    out = [
        Verdict("TCP heavily favours short flows: the nearest source takes the channel and the "
                "far ones starve (DPCLO Fig. 7 A)",
                "under TCP-SACK at least one flow below a tenth of the best flow, and the three "
                "farthest sources' mean below a tenth of the nearest's",
                f"{starved['tcp-sack']:.1f} flows starved; far/near {bias['tcp-sack']:.3f}",
                starved["tcp-sack"] >= 1 and bias["tcp-sack"] < 0.1),
        Verdict("TCP-FeW reduces this bias (DPCLO Fig. 7 A)",
                "far/near higher under TCP-FeW than under TCP-SACK",
                f"{bias['tcp-few']:.3f} against {bias['tcp-sack']:.3f}",
                bias["tcp-few"] > bias["tcp-sack"]),
        Verdict("DPCLO-ZMAC+ does not starve any flow (DPCLO Fig. 7 A)",
                "no flow below a tenth of the best flow (mean over seeds below 0.5 flows)",
                f"{starved['dpclo-zmacplus']:.1f} flows starved; far/near "
                f"{bias['dpclo-zmacplus']:.3f}", starved["dpclo-zmacplus"] < 0.5),
        Verdict("DPCLO-ZMAC+ attains the highest aggregate throughput (DPCLO Fig. 7 A)",
                "its mean aggregate above every other stack's",
                ", ".join(f"{s} {_kbps(a)}" for s, a in agg.items()),
                all(agg["dpclo-zmacplus"] > a for s, a in agg.items() if s != "dpclo-zmacplus")),
        Verdict("DPCLO-ZMAC+'s worst flow delay is about 10× TCP's (DPCLO Fig. 7 B)",
                "its worst flow's mean delay at least 5× TCP-SACK's worst",
                f"{worst['dpclo-zmacplus']:.2f} s against {worst['tcp-sack']:.2f} s "
                f"({worst['dpclo-zmacplus'] / worst['tcp-sack']:.1f}×)"
                if worst["tcp-sack"] > 0 else "no TCP delay",
                worst["dpclo-zmacplus"] >= 5 * worst["tcp-sack"]),
        Verdict("A 1-packet per-destination queue cuts DPCLO's delay, at the expense of "
                "aggregate throughput (DPCLO Fig. 7 B)",
                "worst delay and aggregate both lower with 1-packet queues than with 3",
                f"worst delay {worst['dpclo-queue1']:.2f} s against {worst['dpclo-zmacplus']:.2f} "
                f"s; aggregate {_kbps(agg['dpclo-queue1'])} against "
                f"{_kbps(agg['dpclo-zmacplus'])}",
                worst["dpclo-queue1"] < worst["dpclo-zmacplus"]
                and agg["dpclo-queue1"] < agg["dpclo-zmacplus"]),
        Verdict("Fusion performs very similar to TCP (DPCLO Fig. 7)",
                "Fusion's aggregate within 30 % of TCP-SACK's and its far/near ratio below 0.1 "
                "like TCP's",
                f"aggregate {_kbps(agg['fusion'])} against {_kbps(agg['tcp-sack'])}; far/near "
                f"{bias['fusion']:.3f}",
                abs(agg["fusion"] / agg["tcp-sack"] - 1) <= 0.3 and bias["fusion"] < 0.1
                if agg["tcp-sack"] > 0 else False),
        Verdict("DCLO's delays are of the order of a few tens of seconds (DPCLO §V-D.1)",
                "DCLO's worst flow's mean delay at least 10 s",
                f"{worst['dclo']:.2f} s over the flows that delivered anything; "
                f"{silent['dclo']:.1f} of 8 flows delivered nothing; aggregate "
                f"{_kbps(agg['dclo'])}", worst["dclo"] >= 10.0),
    ]
    return out


def _draw_fig6(m: Measured, ax: Any) -> None:
    for stack in m.sweep.stacks:
        f = m.flows[m.flows["stack"] == stack]
        g = f.groupby("flow")["throughput_bps"].mean() / 1e3
        ax.plot(g.index, g.values, marker="o", label=stack)
    ax.set_xlabel("source (0: farthest from the sink, 7: nearest)")
    ax.set_ylabel("throughput (kbit/s)")
    ax.set_yscale("symlog", linthresh=1.0)
    ax.legend(fontsize=8)


def _judge_fig8(m: Measured) -> List[Verdict]:
    import numpy as np

    def table(stack: str) -> Any:
        f = m.flows[m.flows["stack"] == stack]
        return f.set_index(["seed", "flow"])[["throughput_bps", "delay_mean_s"]]

    d, t, few = table("dpclo-zmacplus"), table("tcp-sack"), table("tcp-few")
    # The same pairs and times under both stacks (merge: join's lsuffix/rsuffix are deprecated).
    both = d.merge(t, left_index=True, right_index=True, how="inner", suffixes=("_d", "_t"))
    better = float((both["throughput_bps_d"] > both["throughput_bps_t"]).mean())
    tr = t["throughput_bps"].to_numpy()
    med = float(np.median(tr))
    starved = float((tr < 0.1 * med).mean()) if med > 0 else 1.0
    high = float((tr > 10 * med).mean()) if med > 0 else 0.0

    def spread(x: Any) -> float:
        q1, q3 = np.percentile(x, [25, 75])
        return float(q3 / q1) if q1 > 0 else math.inf

    sd, st = spread(d["throughput_bps"].to_numpy()), spread(tr)
    delay_t = float(np.nanmean(t["delay_mean_s"].to_numpy()))
    delay_f = float(np.nanmean(few["delay_mean_s"].to_numpy()))
    return [
        Verdict("About 85 % of the flows do better under DPCLO-ZMAC+ than under TCP "
                "(DPCLO Fig. 8 A)",
                "at least 70 % of the flows (the same pairs and times under both) get more "
                "throughput under DPCLO-ZMAC+",
                f"{better:.0%} of {len(both)} flows", better >= 0.7),
        Verdict("DPCLO-ZMAC+'s throughput CDF is steep (DPCLO Fig. 8 A)",
                "its interquartile ratio (75th over 25th percentile) below TCP-SACK's",
                f"{sd:.1f} against {st:.1f}", sd < st),
        Verdict("Under TCP about 20 % of the flows starve (DPCLO Fig. 8 A)",
                "at least 10 % of TCP-SACK's flows below a tenth of its median flow",
                f"{starved:.0%} (median flow {_kbps(med)})", starved >= 0.1),
        Verdict("Under TCP about 10 % of the flows get very high throughput (DPCLO Fig. 8 A)",
                "at least 5 % of TCP-SACK's flows above 10× its median flow",
                f"{high:.0%}", high >= 0.05),
        Verdict("TCP-FeW cuts the delay (DPCLO Fig. 8 B)",
                "TCP-FeW's mean flow delay below TCP-SACK's",
                f"{delay_f:.2f} s against {delay_t:.2f} s", delay_f < delay_t),
        # The document draws Fig. 9 from this many-to-many run (§V-D 2).
    ] + _judge_fig9(m, ", from the many-to-many run of Fig. 8")


def _draw_fig8(m: Measured, ax: Any) -> None:
    import numpy as np

    for stack in m.sweep.stacks:
        x = np.sort(m.flows[m.flows["stack"] == stack]["throughput_bps"].to_numpy() / 1e3)
        ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=stack)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("flow throughput (kbit/s)")
    ax.set_ylabel("CDF")
    ax.legend()


def _judge_fig9(m: Measured, source: str = "") -> List[Verdict]:
    def ratio(stack: str) -> Tuple[float, float, float]:
        f = m.flows[m.flows["stack"] == stack]
        short = f[f["hops"] <= 2]["throughput_bps"].mean()
        long = f[f["hops"] >= 4]["throughput_bps"].mean()
        return (short / long if long > 0 else math.inf), short, long

    t, d = ratio("tcp-sack"), ratio("dpclo-zmacplus")
    return [Verdict(
        "TCP's long flows starve while DPCLO's per-flow throughput is roughly equal across path "
        f"lengths (DPCLO Fig. 9{source})",
        "mean throughput of 1-2-hop flows over 4+-hop flows: DPCLO-ZMAC+'s at most half "
        "TCP-SACK's",
        f"TCP-SACK {t[0]:.1f} ({_kbps(t[1])} / {_kbps(t[2])}), DPCLO-ZMAC+ {d[0]:.1f} "
        f"({_kbps(d[1])} / {_kbps(d[2])})",
        d[0] <= 0.5 * t[0])]


def _draw_fig9(m: Measured, ax: Any) -> None:
    for stack in m.sweep.stacks:
        f = m.flows[m.flows["stack"] == stack]
        g = f.groupby("hops")["throughput_bps"].mean() / 1e3
        ax.plot(g.index, g.values, marker="o", label=stack)
    ax.set_xlabel("path length (hops)")
    ax.set_ylabel("mean throughput (kbit/s)")
    ax.legend()


def _draw_more_scale(m: Measured, ax: Any) -> None:
    for stack in m.sweep.stacks:
        counts, shares = [], []
        for n, f in m.flows[m.flows["stack"] == stack].groupby("flows_random.count"):
            counts.append(int(n))
            shares.append(float((f["throughput_bps"] < STARVED_BPS).mean()))
        ax.plot(counts, shares, marker="o", label=stack)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("flows")
    ax.set_ylabel("share of starved flows")
    ax.legend()


# --- DiffQ §6 at the testbed's settings (issue 20 item 4) -----------------------------------

#: Table 3: the ratio of the average per-run median flow throughput, DiffQ-TCP over TCP-SACK,
#: by flow count.
DIFFQ_TABLE3 = {4: 1.96, 8: 3.45, 16: 4.35, 32: 8.18}
#: A flow below 1 kbit/s is starved (DiffQ Fig. 12: "flows starved for TCP getting no or less
#: than 1 kbps throughput").
TESTBED_STARVED_BPS = 1e3
#: The DiffQ stacks of the sweep and their literal counterparts (``hold_negative = false``).
TESTBED_LITERAL = {"diffq-tcp": "diffq-tcp-literal", "diffq-udp": "diffq-udp-literal"}


def _tb_counts(m: Measured) -> List[int]:
    return sorted(int(c) for c in m.runs["flows_random.count"].unique())


def _tb_rates(m: Measured, stack: str, n: int) -> List[List[float]]:
    """Each run's flow throughputs (bit/s) of ``stack`` with ``n`` flows, in seed order."""
    by_seed = m.rates(stack, {"flows_random.count": n})
    return [by_seed[s] for s in sorted(by_seed)]


def _log_utility(rates: Sequence[float]) -> float:
    """DiffQ §6.1's Σ log r_i over bit/s, a flow below 1 bit/s counting 0 (the summary's)."""
    return sum(math.log(r) for r in rates if r >= 1.0)


def _tb_metric(m: Measured, stack: str, n: int, f: Callable[[Sequence[float]], float]) -> float:
    """The mean over runs of a per-run metric of the flows."""
    return mean([f(r) for r in _tb_rates(m, stack, n)])


def _tb_starved(m: Measured, stack: str, n: int) -> float:
    """The share of the flows (all runs pooled) below 1 kbit/s."""
    flows = [x for r in _tb_rates(m, stack, n) for x in r]
    return sum(x < TESTBED_STARVED_BPS for x in flows) / len(flows) if flows else math.nan


def _tb_ratio(a: float, b: float) -> float:
    return a / b if b > 0 else (math.inf if a > 0 else math.nan)


def _tb_row(values: Sequence[float], counts: Sequence[int], fmt: str = "{:.2f}") -> str:
    return " / ".join(fmt.format(v) for v in values) + " at " + \
        " / ".join(str(n) for n in counts) + " flows"


def table3_ratios(m: Measured, diffq: str = "diffq-tcp") -> Dict[int, float]:
    """Table 3: the mean over runs of the median flow's throughput under ``diffq``, over
    TCP-SACK's, by flow count."""
    return {n: _tb_ratio(_tb_metric(m, diffq, n, statistics.median),
                         _tb_metric(m, "tcp-sack", n, statistics.median))
            for n in _tb_counts(m)}


def _judge_testbed_reliable(m: Measured, dq: str, tag: str) -> List[Verdict]:
    counts = _tb_counts(m)
    top = counts[-1]
    ratios = table3_ratios(m, dq)
    r = [ratios[n] for n in counts]
    doc = [DIFFQ_TABLE3.get(n, math.nan) for n in counts]
    jd = [_tb_metric(m, dq, n, jain) for n in counts]
    jt = [_tb_metric(m, "tcp-sack", n, jain) for n in counts]
    jf = [_tb_metric(m, "tcp-few", n, jain) for n in counts]
    ud = [_tb_metric(m, dq, n, _log_utility) for n in counts]
    ut = [_tb_metric(m, "tcp-sack", n, _log_utility) for n in counts]
    ad = [_tb_metric(m, dq, n, sum) for n in counts]
    at = [_tb_metric(m, "tcp-sack", n, sum) for n in counts]
    af = [_tb_metric(m, "tcp-few", n, sum) for n in counts]
    j_ratio = [_tb_ratio(a, b) for a, b in zip(jd, jt)]
    u_ratio = [_tb_ratio(a, b) for a, b in zip(ud, ut)]
    a_ratio = [_tb_ratio(a, b) for a, b in zip(ad, at)]
    s_tcp, s_dq = _tb_starved(m, "tcp-sack", top), _tb_starved(m, dq, top)
    # Fig. 12: the same pairs (flow i of seed s) under both stacks, at the most flows.
    pairs = [(t, d) for ts, ds in zip(_tb_rates(m, "tcp-sack", top), _tb_rates(m, dq, top))
             for t, d in zip(ts, ds)]
    rescued = [d for t, d in pairs if t < TESTBED_STARVED_BPS]
    rescued_median = statistics.median(rescued) if rescued else math.nan
    name = f"DiffQ-TCP{tag}"
    return [
        Verdict(f"Table 3: {name}'s median flow gets more than TCP-SACK's, the more so the "
                "more flows (the document: 1.96 / 3.45 / 4.35 / 8.18 at 4 / 8 / 16 / 32)",
                "the ratio of the mean per-run medians above 1 at every flow count, and higher "
                "at the most flows than at the fewest",
                _tb_row(r, counts),
                all(x > 1 for x in r) and r[-1] > r[0]),
        Verdict(f"Table 3's size: {name}'s median-flow ratio over TCP-SACK at every flow count",
                "at least half the document's ratio at each flow count ("
                + " / ".join(f"{d / 2:.2f}" for d in doc) + ")",
                _tb_row(r, counts),
                all(x >= d / 2 for x, d in zip(r, doc))),
        Verdict(f"Fig. 11 (a): {name}'s fairness index about two times TCP-SACK's",
                "the mean Jain index higher at every flow count, and at least 1.5× TCP-SACK's "
                "averaged over the flow counts (half the doubling)",
                f"{_tb_row(j_ratio, counts)} ({name} {_per_seed(jd)}, TCP-SACK {_per_seed(jt)})",
                all(x > 1 for x in j_ratio) and mean(j_ratio) >= 1.5),
        Verdict(f"Fig. 11 (c): {name}'s log utility about 20 % better than TCP-SACK's",
                "the mean Σ ln(r/bit/s) at least 10 % above TCP-SACK's averaged over the flow "
                "counts, and above it at every count",
                f"{_tb_row(u_ratio, counts)} ({name} {_per_seed(ud, '{:.0f}')}, TCP-SACK "
                f"{_per_seed(ut, '{:.0f}')})",
                all(x > 1 for x in u_ratio) and mean(u_ratio) >= 1.1),
        Verdict(f"Fig. 11 (b): {name}'s aggregate throughput comparable to TCP-SACK's "
                "(\"slightly less\")",
                "the mean aggregate at least 0.75× TCP-SACK's at every flow count",
                f"{_tb_row(a_ratio, counts)} ({name} {_per_seed([a / 1e3 for a in ad], '{:.0f}')}"
                f", TCP-SACK {_per_seed([a / 1e3 for a in at], '{:.0f}')} kbit/s)",
                all(x >= 0.75 for x in a_ratio)),
        Verdict(f"Figs. 1 (b), 9 and 12: {name} starves far fewer flows than TCP-SACK, which "
                f"starves about 30-40 % of them at {top} flows",
                f"at {top} flows TCP-SACK's share of flows below 1 kbit/s at least 15 % and "
                f"{name}'s at most half of it",
                f"{name} {s_dq:.0%} against TCP-SACK {s_tcp:.0%} (TCP-SACK by flow count "
                f"{_tb_row([_tb_starved(m, 'tcp-sack', n) for n in counts], counts, '{:.0%}')})",
                s_tcp >= 0.15 and s_dq <= 0.5 * s_tcp),
        Verdict(f"Fig. 12: the flows TCP-SACK starves get about 10 to 100 kbit/s under {name}",
                f"over the {top}-flow runs, the flows below 1 kbit/s under TCP-SACK have a "
                f"median of at least 10 kbit/s under {name}",
                f"{len(rescued)} flows starved by TCP-SACK, median {rescued_median / 1e3:.1f} "
                f"kbit/s under {name}" if rescued else "TCP-SACK starved no flow",
                bool(rescued) and rescued_median >= 1e4),
    ] + ([] if tag else [
        Verdict("Fig. 11: TCP-FeW performs about like TCP-SACK (it does not fix TCP's "
                "unfairness)",
                "TCP-FeW's mean Jain index and aggregate each within 25 % of TCP-SACK's "
                "averaged over the flow counts, and its Jain index below DiffQ-TCP's at every "
                "count",
                f"Jain {_per_seed(jf)} against {_per_seed(jt)}; aggregate "
                f"{_per_seed([a / 1e3 for a in af], '{:.0f}')} against "
                f"{_per_seed([a / 1e3 for a in at], '{:.0f}')} kbit/s at "
                + " / ".join(str(n) for n in counts) + " flows",
                abs(mean([_tb_ratio(a, b) for a, b in zip(jf, jt)]) - 1) <= 0.25
                and abs(mean([_tb_ratio(a, b) for a, b in zip(af, at)]) - 1) <= 0.25
                and all(f < d for f, d in zip(jf, jd))),
    ])


def _judge_testbed_unreliable(m: Measured, dq: str, tag: str) -> List[Verdict]:
    counts = _tb_counts(m)
    top = counts[-1]
    jd = [_tb_metric(m, dq, n, jain) for n in counts]
    je = [_tb_metric(m, "tfrc-ecn", n, jain) for n in counts]
    ad = [_tb_metric(m, dq, n, sum) for n in counts]
    ae = [_tb_metric(m, "tfrc-ecn", n, sum) for n in counts]
    j_ratio = [_tb_ratio(a, b) for a, b in zip(jd, je)]
    a_ratio = [_tb_ratio(a, b) for a, b in zip(ad, ae)]
    name = f"DiffQ-UDP{tag}"
    out = [
        Verdict(f"Fig. 13: {name} achieves much better fairness than TFRC-ECN",
                "the mean Jain index higher at every flow count and at least 1.25× TFRC-ECN's "
                "averaged over the flow counts",
                f"{_tb_row(j_ratio, counts)} ({name} {_per_seed(jd)}, TFRC-ECN {_per_seed(je)})",
                all(x > 1 for x in j_ratio) and mean(j_ratio) >= 1.25),
        Verdict(f"Fig. 13: {name} achieves up to 20 % higher average throughput than TFRC-ECN",
                "the mean aggregate at least 0.9× TFRC-ECN's at every flow count and at least "
                "1.1× at one of them",
                f"{_tb_row(a_ratio, counts)} ({name} {_per_seed([a / 1e3 for a in ad], '{:.0f}')}"
                f", TFRC-ECN {_per_seed([a / 1e3 for a in ae], '{:.0f}')} kbit/s)",
                all(x >= 0.9 for x in a_ratio) and max(a_ratio) >= 1.1),
    ]
    mid = 16 if 16 in counts else top
    drops = [sum(g["queue_drops"]) for _, g in m.flows[
        (m.flows["stack"] == dq) & (m.flows["flows_random.count"] == mid)].groupby("seed")]
    out.append(Verdict(
        f"Fig. 15 (§6.4): {name} incurs few queue drops with 16 flows (about 2500 over a "
        "2-minute run)",
        f"at {mid} flows the mean over runs of the flows' queue drops at most 2500 per "
        "one-minute run (twice the document's rate)",
        f"{mean(drops):.0f} per run (per seed {_per_seed(drops, '{:.0f}')})",
        mean(drops) <= 2500))
    if not tag:
        s = {st: _tb_starved(m, st, top) for st in ("tcp-sack", "tcp-few", "tfrc-ecn", dq)}
        out.append(Verdict(
            f"Fig. 14: with {top} flows TFRC-ECN starves fewer flows than TCP and TCP-FeW, yet "
            "more than 40 % of its flows get less than 1 kbit/s",
            f"at {top} flows TFRC-ECN's share below 1 kbit/s under both TCP-SACK's and "
            "TCP-FeW's, and at least 20 %",
            ", ".join(f"{k} {v:.0%}" for k, v in s.items()),
            s["tfrc-ecn"] < min(s["tcp-sack"], s["tcp-few"]) and s["tfrc-ecn"] >= 0.2))
    return out


def _judge_diffq_testbed(m: Measured) -> List[Verdict]:
    out = _judge_testbed_reliable(m, "diffq-tcp", "") + \
        _judge_testbed_unreliable(m, "diffq-udp", "")
    stacks = set(m.runs["stack"])
    if TESTBED_LITERAL["diffq-tcp"] in stacks:
        out += _judge_testbed_reliable(m, TESTBED_LITERAL["diffq-tcp"], " (literal)")
    if TESTBED_LITERAL["diffq-udp"] in stacks:
        out += _judge_testbed_unreliable(m, TESTBED_LITERAL["diffq-udp"], " (literal)")
    return out


def _draw_diffq_testbed(m: Measured, ax: Any) -> None:
    """Fig. 11's three panels and Table 3's ratios by flow count, the per-flow CDF (Figs. 9 and
    14) and Fig. 12's flow-by-flow scatter at the most flows, as insets of ``ax``."""
    import numpy as np

    ax.figure.set_size_inches(13.0, 7.5)
    ax.axis("off")
    counts = _tb_counts(m)
    stacks = list(m.sweep.stacks)
    panels = [ax.inset_axes([0.0 + 0.36 * (i % 3), 0.55 - 0.57 * (i // 3), 0.28, 0.40])
              for i in range(6)]
    for title, f, p in (("(a) Jain's fairness index", jain, panels[0]),
                        ("(b) aggregate (kbit/s)", lambda r: sum(r) / 1e3, panels[1]),
                        ("(c) log utility, Σ ln(r/bit/s)", _log_utility, panels[2])):
        for stack in stacks:
            p.plot(counts, [_tb_metric(m, stack, n, f) for n in counts], marker="o",
                   label=stack)
        p.set_xscale("log", base=2)
        p.set_xticks(counts, [str(n) for n in counts])
        p.set_title(title, fontsize=9)
    panels[0].legend(fontsize=7)
    p = panels[3]
    for dq in ("diffq-tcp", TESTBED_LITERAL["diffq-tcp"]):
        if dq in stacks:
            r = table3_ratios(m, dq)
            p.plot(counts, [r[n] for n in counts], marker="o", label=f"{dq} / tcp-sack")
    p.plot(list(DIFFQ_TABLE3), list(DIFFQ_TABLE3.values()), "k--", marker="x",
           label="the document (Table 3)")
    p.set_xscale("log", base=2)
    p.set_xticks(counts, [str(n) for n in counts])
    p.set_title("Table 3: median-flow ratio", fontsize=9)
    p.legend(fontsize=7)
    p = panels[4]
    for stack in stacks:
        x = np.sort([v for r in _tb_rates(m, stack, counts[-1]) for v in r]) / 1e3
        p.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=stack)
    p.set_xscale("symlog", linthresh=1.0)
    p.set_xlabel("flow throughput (kbit/s)", fontsize=8)
    p.set_title(f"CDF of flows at {counts[-1]} flows (Figs. 9, 14)", fontsize=9)
    p = panels[5]
    for dq in ("diffq-tcp", TESTBED_LITERAL["diffq-tcp"]):
        if dq in stacks and "tcp-sack" in stacks:
            t = [v for r in _tb_rates(m, "tcp-sack", counts[-1]) for v in r]
            d = [v for r in _tb_rates(m, dq, counts[-1]) for v in r]
            p.scatter(np.array(t) / 1e3, np.array(d) / 1e3, s=6, label=dq)
    p.plot([0, 1e4], [0, 1e4], "k:", linewidth=0.8)
    p.set_xscale("symlog", linthresh=1.0)
    p.set_yscale("symlog", linthresh=1.0)
    p.set_xlabel("TCP-SACK (kbit/s)", fontsize=8)
    p.set_title(f"Fig. 12: flow by flow at {counts[-1]} flows", fontsize=9)
    p.legend(fontsize=7)


def _clap(name: str, what: str, title: str, factor: float, slides: str, labels: List[str],
          jain_too: bool = False) -> Experiment:
    """A CLAP slide's experiment: CLAP against TCP-SACK on the shipped scenario ``name``."""
    return Experiment(
        name, f"CLAP slides, {what}", title, name,
        {"clap": {"stack.preset": "clap"}, "tcp-sack": {"stack.preset": "tcp-sack"}},
        seeds=(3, 1), judge=_clap_judge(factor, slides, jain_too),
        draw=lambda m, ax: _bars(m, ax, labels, "transfer rate (kbit/s)", _transfer_rates))


# DPCLO-802.11e as the document runs it on Fig. 5's topologies: with RTS/CTS.
FIG5_STACKS: Dict[str, Dict[str, Any]] = {"dpclo-zmacplus": {"stack.preset": "dpclo-zmacplus"},
                                           "dpclo-80211e": {"stack.preset": "dpclo-80211e",
                                                            "radio.rts_cts": True}}

EXPERIMENTS: Dict[str, Experiment] = {e.name: e for e in [
    Experiment(
        "diffq-fig2", "DiffQ Figs. 2 and 10",
        "a 3-hop TCP flow beside two 1-hop flows: starvation under TCP-SACK, fairness under DiffQ",
        "diffq-fig2",
        {"tcp-sack": {"stack.preset": "tcp-sack"}, "diffq-tcp": {"stack.preset": "diffq-tcp"},
         "diffq-udp": {"stack.preset": "diffq-udp"}},
        seeds=(5, 2), judge=_judge_diffq_fig2,
        draw=lambda m, ax: _bars(m, ax, ["3-hop 0→3", "1-hop 4→5", "1-hop 6→7"])),
    Experiment(
        "dpclo-fig3", "DPCLO Fig. 3",
        "single- against multi-path DPCLO (k_max = 1 against adaptive K) on the 6-node topology",
        "dpclo-fig3",
        {"single-zmacplus": {"stack.preset": "dpclo-zmacplus", "stack.dpclo.k_max": 1},
         "multi-zmacplus": {"stack.preset": "dpclo-zmacplus"},
         "single-80211e": {"stack.preset": "dpclo-80211e", "stack.dpclo.k_max": 1},
         "multi-80211e": {"stack.preset": "dpclo-80211e"}},
        seeds=(5, 2), judge=_judge_fig3,
        draw=lambda m, ax: _bars(m, ax, ["flow 1 (A→E)", "flow 2 (D→F)"])),
    Experiment(
        "dpclo-fig4", "DPCLO Fig. 4",
        "DPCLO-ZMAC+ with and without ETX over links losing U[0, 0.6] (each seed a loss draw)",
        "dpclo-fig4",
        {"etx": {"stack.dpclo.etx": True}, "no-etx": {"stack.dpclo.etx": False}},
        seeds=(10, 4), quick_overrides={"duration_s": 80.0},
        judge=_judge_fig4, draw=lambda m, ax: _bars(m, ax, ["A→E", "D→F"])),
    Experiment(
        "dpclo-fig5a", "DPCLO Fig. 5 (A)-(C)",
        "information asymmetry: two one-hop flows, DPCLO over 802.11e against ZMAC+, at "
        "Table I's 2 Mbit/s and 200-byte packets",
        "dpclo-fig5a",
        {"dpclo-80211e": {"stack.preset": "dpclo-80211e"},
         "dpclo-zmacplus": {"stack.preset": "dpclo-zmacplus"}},
        overrides={"radio.data_rate_mbps": 2.0, "flows[0].payload_bytes": 200,
                   "flows[1].payload_bytes": 200},
        seeds=(10, 4), judge=_judge_fig5a,
        draw=lambda m, ax: _bars(m, ax, ["A→B", "C→D"])),
    Experiment(
        "dpclo-fig5d", "DPCLO Fig. 5 (D)-(F)",
        "symmetric flows A→B and D→C on a 4-node chain: capture over 802.11e, not over ZMAC+",
        "dpclo-fig5d", FIG5_STACKS, seeds=(5, 2), judge=_judge_fig5d,
        draw=lambda m, ax: _bars(m, ax, ["A→B", "D→C"])),
    Experiment(
        "dpclo-fig5g", "DPCLO Fig. 5 (G)-(I)",
        "symmetric flows A→B and C→B (hidden senders): 802.11e with RTS/CTS against ZMAC+",
        "dpclo-fig5g", FIG5_STACKS, seeds=(5, 2), judge=_judge_fig5g,
        draw=lambda m, ax: _bars(m, ax, ["A→B", "C→B"])),
    Experiment(
        "dpclo-fig6", "DPCLO Figs. 6-7",
        "many-to-one on 108 nodes: 8 sources to a sink on the right edge, five stacks",
        "dpclo-fig6",
        {"dpclo-zmacplus": {"stack.preset": "dpclo-zmacplus"},
         "dpclo-queue1": {"stack.preset": "dpclo-zmacplus", "net.dest_queue_packets": 1},
         "tcp-sack": {"stack.preset": "tcp-sack"}, "tcp-few": {"stack.preset": "tcp-few"},
         "fusion": {"stack.preset": "fusion"}, "dclo": {"stack.preset": "dclo"}},
        seeds=(3, 1),
        quick_overrides={"duration_s": 60.0, **{f"flows[{i}].stop_s": 60.0 for i in range(8)}},
        judge=_judge_fig6, draw=_draw_fig6),
    Experiment(
        "dpclo-fig8", "DPCLO Fig. 8",
        "many-to-many on 108 nodes: about 206 flows arriving over 800 s (Weibull arrivals, "
        "log-normal durations)",
        "dpclo-fig8",
        {"dpclo-zmacplus": {"stack.preset": "dpclo-zmacplus"},
         "tcp-sack": {"stack.preset": "tcp-sack"}, "tcp-few": {"stack.preset": "tcp-few"}},
        seeds=(2, 1), quick_overrides={"duration_s": 220.0, "flows_random.stop_s": 200.0},
        judge=_judge_fig8, draw=_draw_fig8),
    Experiment(
        "dpclo-fig9", "DPCLO Fig. 9",
        "throughput by path length, 108 random nodes (many-to-many flows over DSDV-ETX)",
        "dpclo-fig9",
        {"tcp-sack": {"stack.preset": "tcp-sack"},
         "dpclo-zmacplus": {"stack.preset": "dpclo-zmacplus"}},
        seeds=(3, 1), quick_overrides={"duration_s": 40.0},
        judge=_judge_fig9, draw=_draw_fig9),
    _clap("clap-1hop", "one clean hop",
          "a 1 MB transfer over one 802.11b hop: CLAP against TCP-SACK",
          4.0, "the slides: +300 %", ["1 MB file"]),
    _clap("clap-noise", "noisy hop",
          "one hop with 1 s noise pulses: CLAP uses the good periods, TCP-SACK shuts down",
          46.0, "the slides: +4500 %", ["1 MB file"]),
    _clap("clap-multiflow", "three flows", "three 1 MB transfers on one hop: aggregate and fairness",
          3.0, "the slides: about 3:1", ["flow 1", "flow 2", "flow 3"], jain_too=True),
    Experiment(
        "more-path", "MORE (Chachulski et al.), a lossy 4-hop path",
        "coded opportunistic forwarding against single-path ETX routing with link ACKs",
        "more-path",
        {"more": {"stack.preset": "more"}, "single-path": {"stack.preset": "udp"}},
        seeds=(3, 2), judge=_judge_more_path,
        draw=lambda m, ax: _bars(m, ax, ["flow 9→35"])),
    Experiment(
        "more-scale", "DiffQ Fig. 1 and §6.2 (Figs. 6-7)",
        "MORE and DiffQ-MORE with 1-32 random flows on the 46-node testbed",
        "more-testbed",
        {"more": {"stack.preset": "more"}, "diffq-more": {"stack.preset": "diffq-more"}},
        seeds=(3, 1), grid={"flows_random.count": [1, 2, 4, 8, 16, 32]},
        quick_grid={"flows_random.count": [1, 8, 32]},
        judge=_judge_more_scale, draw=_draw_more_scale),
    Experiment(
        "diffq-testbed", "DiffQ §6.3 (Table 3, Figs. 9, 11-14)",
        "TCP-SACK, TCP-FeW, DiffQ-TCP, TFRC-ECN and DiffQ-UDP with 4-32 random flows on the "
        "46-node testbed (1400-byte packets, OLSR-ETX, one-minute runs), DiffQ also literal "
        "(hold_negative = false)",
        "diffq-testbed",
        {"tcp-sack": {"stack.preset": "tcp-sack"}, "tcp-few": {"stack.preset": "tcp-few"},
         "diffq-tcp": {"stack.preset": "diffq-tcp"},
         "tfrc-ecn": {"stack.preset": "tfrc-ecn"}, "diffq-udp": {"stack.preset": "diffq-udp"},
         "diffq-tcp-literal": {"stack.preset": "diffq-tcp", "stack.diffq.hold_negative": False},
         "diffq-udp-literal": {"stack.preset": "diffq-udp", "stack.diffq.hold_negative": False}},
        seeds=(10, 2), grid={"flows_random.count": [4, 8, 16, 32]},
        quick_grid={"flows_random.count": [4, 32]}, quick_overrides={"duration_s": 40.0},
        judge=_judge_diffq_testbed, draw=_draw_diffq_testbed),
]}


def experiment(name: str) -> Experiment:
    try:
        return EXPERIMENTS[name]
    except KeyError:
        raise KeyError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)} "
                       "(xlayer reproduce --list)") from None


@dataclass
class Reproduction:
    """An experiment's outcome: its sweep folder, the judged claims and the figure's path."""

    experiment: Experiment
    folder: Path
    verdicts: List[Verdict]
    figure: Optional[Path]
    #: What ``claims.json`` holds: the experiment, its size (runs, seeds, quick) and the claims.
    document: Dict[str, Any] = field(default_factory=dict)

    @property
    def holds(self) -> int:
        return sum(v.holds for v in self.verdicts)


def reproduce(name: str, out: Optional[PathLike] = None, *, quick: bool = False,
              workers: Optional[int] = None, scheduler: Optional[str] = None,
              progress: Any = False, plot: bool = True) -> Reproduction:
    """Runs experiment ``name`` (resuming its folder), judges its claims and draws its figure."""
    from xlayer.results import make_temp_file
    from xlayer.sweeps import sweep

    exp = experiment(name)
    spec = exp.sweep_spec(quick)
    folder = Path(out) if out is not None else Path("results") / spec["name"]
    s = sweep(spec, out=folder, workers=workers, scheduler=scheduler, progress=progress)
    verdicts = judge(exp, s)
    doc = {"experiment": exp.name, "document": exp.document, "title": exp.title,
           "quick": quick, "runs": int(len(s.runs)), "seeds": sorted(int(x) for x in s.ok["seed"].unique()),
           "claims": [v.as_dict() for v in verdicts]}
    tmp = make_temp_file(folder, "claims")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(folder / "claims.json")
    figure = draw(exp, s, folder / f"{exp.name}.png") if plot else None
    return Reproduction(exp, folder, verdicts, figure, doc)


def claims_markdown(docs: Sequence[Dict[str, Any]]) -> str:
    """The judged claims of experiments as one Markdown table (the README's form): ``docs`` are
    ``claims.json`` documents (:func:`reproduce` writes them), a row per claim, the experiment's
    size beside its name (its runs and seeds, and *quick* for a ``--quick`` run)."""
    lines = ["| experiment | document's claim | holds when | measured | |",
             "|---|---|---|---|---|"]
    for doc in docs:
        seeds = doc.get("seeds") or []
        size = f"{doc.get('runs', '?')} runs"
        if seeds:
            size += f", seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f", seed {seeds[0]}"
        if doc.get("quick"):
            size += ", **quick**"
        for i, c in enumerate(doc["claims"]):
            name = f"`{doc['experiment']}` ({size})" if i == 0 else ""
            cells = [name, c["claim"], c["criterion"], c["measured"],
                     "holds" if c["holds"] else "**does not hold**"]
            lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """Text made safe for one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def judge(exp: Experiment, sweep: Any) -> List[Verdict]:
    """The experiment's claims judged on a loaded sweep."""
    return exp.judge(Measured(sweep))


def draw(exp: Experiment, sweep: Any, path: Path) -> Optional[Path]:
    """Draws the experiment's figure to ``path`` (PNG, written atomically); None without
    matplotlib or a drawing."""
    if exp.draw is None:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    from xlayer.results import make_temp_file

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    exp.draw(Measured(sweep), ax)
    ax.set_title(f"{exp.document}: {exp.name}", fontsize=10)
    fig.tight_layout()
    tmp = make_temp_file(path.parent, path.stem)
    fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
    tmp.replace(path)
    return path
