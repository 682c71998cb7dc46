"""The optimum oracle (issue 22): how far a run is from the optimum of its network utility problem.

The network comes from the core (``xlayer._core.oracle_model``, ``xlayer_core::oracle``, where
every physical model choice is documented): the directed links that can carry data with their
capacities in delivered packets per second, the conflict graph (two links conflict when they
cannot both succeed at once), and each flow's static route and measured window. This module
solves

    maximise U(y)  over flow rates y >= 0 (Mbit/s), time shares lambda_S >= 0 of independent sets S
    subject to     sum_S lambda_S <= 1
                   for every link l:  sum_f a_fl * z_fl <= sum_{S containing l} lambda_S

where ``z_fl`` is flow f's rate over link l (``y_f`` on each link of its static route, or a free
multi-commodity flow, over every link or over generated links, see :class:`_Master`) and
``a_fl`` the airtime a Mbit of flow f takes on link l. U is the sum of ln(rate in bit/s)
(proportional fairness; a conic problem solved by cvxpy with Clarabel), the aggregate, or the
smallest rate (LPs, HiGHS: one model kept across the iterations through highspy and solved
by its interior point, :class:`_WarmLP`, or scipy's ``linprog`` anew each iteration without
it).

The independent sets are generated, not enumerated (column generation): starting from a few
maximal independent sets that cover every link (or the columns of an earlier solve of the same
model), the master problem's link prices mu_l price every independent set; an exact
maximum-weight independent set (a MILP, HiGHS through ``scipy.optimize.milp``, one constraint
"at most one link" per clique of a cover of the conflict graph's edges) is the pricing step,
and a set whose weight exceeds the price of time (the dual of ``sum lambda <= 1``) joins
the master, made maximal (links added in order of price while they conflict with none of it: a
larger independent set is never worse). Sets grown greedily by price from every priced link
are tried first; the exact pricing runs when they find none or the master's value stalls. The
proportional-fair master drops the sets idle for a few iterations (:data:`PRUNE_AFTER`).
When no set improves, the master's optimum is the optimum over the convex hull of all
independent sets (within ``TOLERANCE``).

Each exact pricing also gives an upper bound (Lagrangian): for any link prices mu >= 0, every
feasible point has ``sum_f y_f d_f <= W``, with d_f the airtime-weighted price of flow f's
cheapest route (its static route, or its cheapest path under multi-path routing: Dijkstra)
and W the heaviest independent set's price (the MILP's dual bound), so the aggregate is at
most W / min d, the smallest rate at most W / sum d, and the sum of ln y at most
sum ln(W / (N d_f)). The pricing is stabilised (Wentges: run first at the average of the
master's prices and those of the best bound so far), and once the proportional-fair master's
value stalls its bound also comes from the certificate of its rates (:func:`_certify`). The
master's value is achievable (a lower bound), so the optimum lies between the two: the
summary's ``bound`` and ``gap`` (relative; per flow in ln(rate) for proportional fairness),
valid however the generation ended — at the optimum, at ``GAP_TOLERANCE``, at a
``time_limit`` or when Clarabel failed on a larger master.

**Against a run** (:func:`compare_run`, :func:`oracle` on a result folder, :func:`sweep_oracle`
on a sweep folder): each flow's measured rate beside its proportional-fair rate, and two
fractions of the run, both at most 1 when the model holds:

- ``fraction_aggregate``: the measured aggregate over the largest aggregate;
- ``fraction_utility``: ``exp((U - U*) / N)`` with U the run's sum of ln(rate), U* the
  proportional-fair optimum's and N the flows: the geometric mean of measured/optimal over the
  flows, the factor by which scaling every optimal rate gives the run's utility. A ratio of
  the utilities themselves would depend on the unit of rate (ln of bit/s or of Mbit/s).

When the flows' measured windows differ (flows starting or stopping at different times), a
flow's throughput is averaged over its own window, and those rates together need not be
feasible at any one time; the fractions then use each flow's delivered bits over the span of
all windows, a time average of feasible rates, which the bounds hold for.

The bound a run is held against has the routing its packets could take (``routing="auto"``):
the scenario's static routes when it routes statically (``net.routing = "static"`` and a stack
that follows the routing table), free multi-path routing otherwise (DSDV, OLSR, DPCLO's and
multi-path DiffQ's K next hops, DCLO's routing by differentials), which no routing beats.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
import os
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import (Any, Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence,
                    Tuple, Union)

import numpy as np
import pandas as pd

from xlayer._extras import require

require("oracle", "the optimum oracle (xlayer oracle, xlayer.optimum)", ("scipy",))
from scipy import sparse  # noqa: E402
from scipy.optimize import Bounds, LinearConstraint, linprog, milp  # noqa: E402

from xlayer import _core  # noqa: E402
from xlayer.errors import MissingExtraError, ScenarioError, XlayerError  # noqa: E402

__all__ = ["OBJECTIVES", "ROUTINGS", "BACKOFFS", "OracleResult", "OracleSweep", "model", "solve",
           "oracle", "compare_run", "run_routing", "sweep_oracle", "fraction_utility",
           "require_solver"]

OBJECTIVES = ("proportional", "aggregate", "maxmin")
ROUTINGS = ("static", "multipath")
#: ``none``: no backoff charged per attempt (the bound; ``xlayer_core::oracle``); ``mean``: the
#: mean backoff of a fresh contention window charged to every attempt, a lone DCF sender's
#: capacity, which several contending senders beat (they count their backoffs down together).
BACKOFFS = ("none", "mean")

#: Column generation stops when no independent set's weight exceeds the price of time by more
#: than this relative amount; the optimum it returns is within it of the true one.
TOLERANCE = 1e-6
#: Column generation also stops when the upper bound (:func:`_lagrangian_bound`,
#: :func:`_certify`) is within this of the master's value: relative for the aggregate and the
#: smallest rate, per flow in ln(rate) for the proportional-fair utility (the optimal rates'
#: geometric mean at most 1.00001 times the one found), far below the 0.1 % the fractions of
#: the optimum are printed to; ``solve(gap=...)`` and ``xlayer oracle --gap`` ask another.
#: The summary's ``gap`` is the one reached. (1e-6 before, at which dpclo-fig6's
#: proportional fairness ended a minute's limit at 2e-6; it ends at 1.4e-6 in 3 s now.)
GAP_TOLERANCE = 1e-5
#: A run's fraction of optimal above 1 + this is "beating the optimum": the model is wrong.
FRACTION_TOLERANCE = 0.02
MAX_ITERATIONS = 10_000
#: Wentges smoothing of the exact pricing's link prices (:func:`solve`): the weight of the
#: prices of the best bound so far against the master's. 0 prices at the master's only.
SMOOTHING = 0.5
#: The most rounds of sets (the exact pricing's and the greedy ones, as :func:`solve` adds)
#: one certificate (:func:`_certify`) adds before the proportional-fair master is solved
#: again with them.
CERTIFY_ROUNDS = 10
#: The proportional-fair generation runs the exact pricing at the master's own link prices
#: also when the smoothed pricing (:data:`SMOOTHING`) found a set that improves the master,
#: and both sets join: a MILP costs a third of a Clarabel master on dpclo-fig9 (0.37 s
#: against 1.1 s), so a second set and a second bound per master pay (96 iterations to its
#: tolerance before, 82 with it). The linear masters price once.
PRICE_BOTH = True
#: The objectives :data:`PRICE_BOTH` applies to. The linear ones too, their two MILPs at
#: once (:data:`PARALLEL`), measured and not kept (2026-12-07, ``python
#: benches/oracle_scale.py --scenario S --routing multipath --objective aggregate,maxmin
#: --time-limit 120 --set 'PRICE_BOTH_FOR=("proportional","aggregate","maxmin")'`` and
#: without, one after the other on 2 quiet cores): dpclo-fig9's aggregate 71.3 -> 81.3 s to
#: its optimum (85 -> 81 iterations), dpclo-fig8's 31.6 -> 45.4 s (47 -> 55); the max-mins at
#: the limit, dpclo-fig9's gap 1.4 % -> 0.38 %, dpclo-fig8's 7.0 % -> 7.6 %.
PRICE_BOTH_FOR: Tuple[str, ...] = ("proportional",)
#: The master forms (:class:`_Master`) whose proportional-fair bound also comes from the
#: certificate of the master's rates (:func:`_certify`).
CERTIFY_FORMS: Tuple[str, ...] = ("routes", "links")
#: Clarabel's settings for the proportional-fair master, each tried when the one before
#: failed: its defaults, then shorter interior-point steps (more-testbed's master after 45
#: iterations stopped with "insufficient progress" under the defaults and solved with 0.9).
#: Without iterative refinement of its KKT solves a dpclo-fig9 master took 40 % less time
#: (the same interior-point iterations), but its prices were noisier (the master's value
#: jittered by 4e-6) and the generation's bound stalled: 0.029 per flow from iteration 95 to
#: 120, where with the refinement the solve ends at 82. Measured and not kept (2026-11-27,
#: side by side, ``benches/oracle_scale.py --routing multipath --objective proportional``):
#: tolerances of 1e-6 instead of 1e-8 (gap, feasibility; 1e-5 for the KKT ratio) make each
#: master about a quarter cheaper, so dpclo-fig8 ends a 60 s limit at a gap of 0.17 per flow
#: after 25 iterations instead of 0.27 after 18, but the solves that reach the optimum take as
#: long or longer (noisier prices, more iterations): mesh-7x7 4.5 -> 5.0 s, more-testbed
#: 37.9 -> 35.9 s, dpclo-fig9 119.6 -> 125.8 s; ``direct_solve_method="faer"`` was no faster.
#: Loose only while the gap is unknown or above 1e-3 per flow: mesh-7x7 4.5 -> 5.1 s (34
#: iterations instead of 32), more-testbed 37.9 -> 35.1 s (75, 80), dpclo-fig9 119.6 -> 106.8 s
#: (76, 82) — mixed, and a solve whose first bound already meets the tolerance would end on a
#: loose master's value; not kept either. Without iterative refinement again (tried first,
#: then the rest after it): dpclo-fig8 at 60 s a gap of 0.20 per flow after 24 iterations
#: instead of 0.24 after 19, but mesh-7x7 4.0 -> 4.6 s and dpclo-fig9 126.7 -> 140.1 s (82 ->
#: 114 iterations), as above. Nor the master as the kept HiGHS LP (:class:`_WarmLP`) with each
#: ln y_f replaced by the least of its tangents (six at 1e-4..10 Mbit/s, one more at each
#: re-solve's rates until the approximation is within 1e-7 per flow): exact on mesh-7x7's
#: static routes (the same utility to 3e-7) but 12-16 re-solves per iteration on dpclo-fig8,
#: which at 60 s was at -957.2 after 6 iterations by the interior point, -942.4 after 10 by
#: the simplex from the last basis, where Clarabel's master is at -888.4 after 19.
CLARABEL_RETRIES: Tuple[Dict[str, Any], ...] = ({}, {"max_step_fraction": 0.9})
#: Multi-path routing is solved in link form over every link (a rate per commodity and link,
#: :func:`_arc_form`) up to this many commodity-link variables, over generated links above
#: (:class:`_Master`), for every objective: for the proportional-fair one (Clarabel: 25 s a master of 19,170
#: on dpclo-fig9; more-testbed's 4748 ended 2 minutes at a gap of 0.045 per flow over every
#: link, 0.038 over generated links) and for the linear ones (HiGHS, each master solved anew
#: then: dpclo-fig9's aggregate over every link ended a minute 25 % from its bound, over
#: generated links 9 %;
#: more-testbed's 2.7 % and 0.35 % after 2 minutes). dclo-dense (562) and dpclo-fig6 (1213,
#: one commodity each) solve over every link in seconds.
ARC_LIMIT = 2_000
#: Each iteration tries maximal independent sets grown greedily by price from this many of
#: the dearest links (:func:`_greedy_sets`). With dpclo-fig9's routes frozen, 64 left its
#: proportional-fair master at -54.3 after 60 iterations and still rising 0.03 per iteration;
#: from every priced link (several hundred there) it reached -53.4 in 29 and settled (the sets
#: are cheap; the master's solve is what costs, and :data:`PRUNE_AFTER` keeps it small).
#: Keeping only the 250 dearest of them an iteration left dpclo-fig9 behind (a gap of 0.046
#: per flow after 75 iterations, where all of them reach 0.016 in 65).
GREEDY_TRIES = 1000
#: At most this many of an iteration's greedy sets (the dearest at the master's prices) join
#: the max-min master, which keeps every set; 0: all of them. dpclo-fig9's max-min grew by
#: 800 sets an iteration, its warm masters to 2 s and 4000 simplex iterations each: with
#: ``--time-limit 120`` it ended at a gap of 0.43 after 52 iterations with all of them, 0.18
#: after 101 with 100, 0.23 after 143 with 20; but dpclo-fig8's max-min ended at 0.50 with
#: 100 where all of them reach 0.40 (each pair side by side), so all of them still join.
#: (With 100 for the aggregate, dpclo-fig9's was 0.8 % from its bound after two minutes,
#: where with all it reaches its optimum in 85 s.)
GREEDY_KEEP_MAXMIN = 0
#: The proportional-fair master drops a column idle (no time share) in this many masters in
#: a row; one the pricing finds again comes back. Its optimum keeps (a column without time
#: share has a reduced cost <= 0), and Clarabel's time grows with the columns: dpclo-fig9's
#: master held 23,000 sets after 32 iterations without it, 2000-4500 with it. Not for the
#: linear objectives, whose degenerate LPs then cycle (dpclo-fig9's aggregate dropped and
#: found the same sets again for 200 iterations without moving). 0 keeps every column.
#: Sooner is not faster: with 1 dpclo-fig9 was at a gap of 0.025 per flow after 87
#: iterations, with 2 at 0.016 after 79, where 3 ends at its tolerance in 82.
PRUNE_AFTER = 3
#: A column counts as idle for :data:`PRUNE_AFTER` when its time share in the master is at
#: most this. The interior point leaves thousands of sets a share between 1e-9 and 1e-6
#: (dpclo-fig8's proportional fairness at its 10th master: 3215 of 6197 above 1e-9, 547 above
#: 1e-6, 484 above 1e-4), so few are dropped; but dropping them does not make the masters
#: cheaper. Measured and not kept (2026-11-27, ``benches/oracle_scale.py --scenario
#: scenarios/dpclo-fig8.toml --routing multipath --objective proportional --time-limit 60``):
#: 1e-6 held 4000 sets where 1e-9 holds 8000, each master still took 4 s (its multi-commodity
#: flow, 2400 paths' links, is the cost), and it ended at -895.0 and a gap of 0.40 per flow
#: after 20 iterations, where 1e-9 ends at -888.4 and 0.24 after 19 (1e-7: -893.8, 0.37).
PRUNE_SHARE = 1e-9
#: The linear masters (aggregate, max-min) are one HiGHS LP kept across the iterations and
#: re-solved from its last basis (:class:`_WarmLP`, through highspy, in the ``oracle`` extra;
#: its prices stay closer from one iteration to the next, so the generation ends sooner);
#: False, or without highspy, each is solved anew by ``scipy.optimize.linprog``.
WARM_LP = True
#: How HiGHS solves that kept LP (:class:`_WarmLP`): ``"ipm"``, its interior point without
#: crossover, or ``"simplex"``, its dual simplex from the last basis. The simplex ends at a
#: vertex, whose link prices are one of the many optimal duals of a degenerate master: on the
#: large ones the sets priced there improve nothing and the bound they give creeps. The
#: interior point ends inside the optimal face, with prices near the centre of the optimal
#: duals (what stabilisation aims at), but solves each master afresh. Simplex → interior
#: point, ``--routing multipath --time-limit 120`` (2 cores, about one each): dpclo-fig8's
#: aggregate 17 % from its bound after 120 s → its optimum in 27 s; its max-min 29 % → 7.3 %
#: after 120 s; dpclo-fig9's max-min 18 % → 0.38 %; but dpclo-fig9's aggregate, optimal
#: either way, 29 → 71 s, more-testbed's 14 → 21 s, and masters the simplex solves in
#: seconds up to three times slower (mesh-7x7's max-min 3.4 → 7.2 s, dpclo-fig6's aggregate
#: 0.2 → 1.6 s). Starting by the simplex and turning to the interior point once the master
#: held 5000 sets did worse on both large ones (dpclo-fig8's aggregate 84 s, dpclo-fig9's 88).
LINEAR_SOLVER = "ipm"
#: The exact pricing solves the maximum-weight independent set by dynamic programming along
#: an order of the priced links (:func:`_frontier_mwis`) when its frontier fits 64 links and
#: its states stay below this many, else by HiGHS's MILP (dpclo-fig9's 1220 links are too
#: wide; mesh-7x7's 168 take 17,000 states and 45 ms, the MILP 0.9 s; more-testbed's 258
#: under multi-path routing 75,000-100,000 a step along the order of fewest states, up to
#: 300,000 along others). 0: always the MILP.
FRONTIER_STATES = 300_000
#: The frontier of :func:`_frontier_mwis` may hold up to 64 x this many links (a state is
#: that many uint64 words; one where it fits, as before). No shipped scenario needs two
#: now: more-testbed's 68 links along reverse Cuthill-McKee hold 2,000,000 states, its
#: order of fewest states (:data:`FRONTIER_ORDERS`) has 52.
FRONTIER_WORDS = 2
#: The frontier order is also grown greedily (:func:`_narrow_order`) from breadth-first
#: orders from this many links evenly spaced along reverse Cuthill-McKee; the order of
#: fewest states wins (more-testbed under multi-path routing: 2,440,000 states over all its
#: steps for 8,150,000 from Cuthill-McKee's end, a pricing three times faster; choosing
#: takes 1.3 s there, 0.3 s on mesh-7x7).
FRONTIER_ORDERS = 8
#: Where the dynamic programming prices, the exact pricing at the master's own prices adds
#: up to this many more improving sets besides the heaviest: the heaviest of its last step's
#: other states (:func:`_frontier_mwis`). For the linear objectives (aggregate, max-min),
#: whose vertex prices otherwise add one set an iteration.
FRONTIER_SETS = 16
#: The objectives :data:`FRONTIER_SETS` applies to.
FRONTIER_SETS_FOR = ("proportional", "aggregate", "maxmin")
#: Where the exact pricing is the dynamic programming (:attr:`_Problem.frontier_order`), it
#: runs every iteration, beside the greedy sets, and not only once they find nothing or the
#: master's value stalls: it costs less than a master there (mesh-7x7 under multi-path
#: routing: 20 ms a pricing), and its sets and bounds each iteration cut the proportional-fair
#: generation from 709 iterations and a gap of 5e-4 after a minute to its optimum in 281.
PRICE_EVERY_ITERATION = True
#: Where the exact pricing runs every iteration (:data:`PRICE_EVERY_ITERATION`), the
#: proportional-fair master is stabilised (a proximal bundle step): its link capacities may
#: be exceeded by a slack s at a cost ``c.s + t/2 |s|^2``, with c the link prices of the best
#: Lagrangian bound so far (the Wentges centre) and t this, so its link prices (``c + t s``)
#: stay near the centre and the sets priced there refine the bound where it is lowest; the
#: master without it, on the same sets, gives the value (a feasible point) every
#: :data:`PROX_VALUE_EVERY` iterations and whenever nothing improves at the stabilised
#: prices (then the next master is unstabilised and ends the generation as before). Not
#: while the master's certificate (:func:`_certify`) bounds it. mesh-7x7 under multi-path
#: routing reaches its optimum in 151 iterations for 281 (t = 10: 156, 100: 173, 4.8: 260);
#: grids of 12-30 nodes with 4 flows in 10-43 for 6-66 (t = 2.5 took 18-149). 0: none.
PROX = 20.0
#: See :data:`PROX`.
PROX_VALUE_EVERY = 4
#: Two solves the generation needs from the same prices run at once in two threads: the
#: plain and the stabilised proportional-fair masters of every :data:`PROX_VALUE_EVERY`-th
#: iteration (Clarabel releases the GIL) and the two exact pricings of a proportional-fair
#: iteration by MILP (:data:`PRICE_BOTH`; HiGHS through scipy releases it too). The results
#: are those of solving them one after the other, to the bit (:func:`_solve_conic`,
#: :func:`solve`). False: one after the other. Multi-path proportional fairness on 2 cores
#: (2026-12-07, ``XLAYER_ORACLE_TRACE=1 python benches/oracle_scale.py --scenario S
#: --routing multipath --objective proportional``, with ``--set PARALLEL=False`` and
#: without, one after the other on a quiet machine; the same iterations, sets and bounds):
#: dpclo-fig9 118.5 -> 107.8 s (its pricings 22.2 -> 14.0 s), more-testbed 40.2 -> 36.7 s
#: (masters 27.4 -> 23.5 s), mesh-7x7 5.0 -> 4.75 s. The frontier pricings stay one after
#: the other: their dynamic programming holds the GIL (two at once took 1.16 s for 1.35 s
#: one after the other on mesh-7x7's).
PARALLEL = True
#: Stacks that choose next hops themselves, whatever the routing table (``run_routing``).
SELF_ROUTING_PRESETS = ("dclo",)
#: Changes whenever what :func:`sweep_oracle` caches changes, so that old caches are redone.
CACHE_FORMAT = 1
#: The cache of :func:`sweep_oracle` in a sweep folder.
CACHE_FILE = "oracle.json"

_TRACE = bool(os.environ.get("XLAYER_ORACLE_TRACE"))
#: Seconds spent so far in the current :func:`solve`'s masters, exact pricings and greedy
#: sets (XLAYER_ORACLE_TRACE prints them with each iteration).
_CLOCK: Dict[str, float] = {"master": 0.0, "pricing": 0.0, "greedy": 0.0}


def _clocked(name: str, fn: Callable[..., Any], *args: Any) -> Any:
    t = time.perf_counter()
    try:
        return fn(*args)
    finally:
        _CLOCK[name] += time.perf_counter() - t


def _clock_text() -> str:
    return " ".join(f"{k} {v:.1f}" for k, v in _CLOCK.items())

PathLike = Union[str, "os.PathLike[str]"]


def require_solver() -> Any:
    """cvxpy (with Clarabel), which the proportional-fair objective needs; a one-line
    :class:`XlayerError` naming the ``oracle`` extra when it is missing."""
    try:
        import clarabel  # noqa: F401
        import cvxpy as cp
    except ImportError:
        raise MissingExtraError(
            "the proportional-fair oracle needs cvxpy and clarabel: pip install 'xlayer[oracle]' "
            "(or use --objective aggregate|maxmin, which need only scipy)"
        ) from None
    return cp


def model(scenario: Any = None, overrides: Iterable[str] = (), seed: Optional[int] = None
          ) -> Dict[str, Any]:
    """The core's model of a scenario (TOML path, dict or None): links, conflicts, flows."""
    from xlayer.scenario import load_scenario

    raw = load_scenario(scenario, overrides, seed)
    m = _core.oracle_model(json.dumps(raw, allow_nan=False))
    return m


class SolveProgress(NamedTuple):
    """Where a :func:`solve` stands, given to its ``progress`` callback after each iteration
    that solved a master: ``gap`` is the summary's (relative for the aggregate and max-min, per
    flow in ln(rate) for proportional fairness; infinite until the first exact pricing gives
    a bound), ``columns`` the independent sets in the master, ``paths`` its generated paths
    (the flows under static routing)."""

    objective: str
    iteration: int
    elapsed_s: float
    columns: int
    paths: int
    gap: float


#: ``progress(state)``: called by :func:`solve` as the column generation goes on.
#: Returning True (the object ``True``: any other value, a progress bar's ``update()`` result
#: for one, is ignored) asks the solve to stop as a time limit would, with ``stopped``
#: "interrupted": at once when the iteration just reported ended with an exact pricing (which
#: gave the bound), else at the next one (``xlayer oracle``'s first Ctrl-C).
SolveCallback = Callable[[SolveProgress], Optional[bool]]


@dataclass
class OracleResult:
    """The optimum: ``flows`` (flow, src, dst, hops, rate_bps, and after :func:`compare_run`
    measured_bps and measured_over_optimal) and ``summary`` (objective, routing, backoff,
    utility, aggregate_bps, min_rate_bps, links, conflicts, columns, form
    (how the master routes: ``routes`` static, ``links`` or ``generated links`` multi-path,
    see :class:`_Master`), paths (those generated in the generated-links form, else the
    flows), iterations,
    solve_s, and
    after a comparison measured_utility, measured_aggregate_bps, optimal_utility,
    optimal_aggregate_bps, fraction_utility and fraction_aggregate)."""

    flows: pd.DataFrame
    summary: Dict[str, Any]
    links: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    columns: List[Tuple[int, ...]] = field(repr=False, default_factory=list)

    def to_json(self) -> Dict[str, Any]:
        out = {k: _plain(v) for k, v in self.summary.items()}
        out["flows"] = [{k: _plain(v) for k, v in row.items()}
                        for row in self.flows.to_dict(orient="records")]
        return out


def _plain(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        v = float(v)
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def log_utility(rates_bps: Iterable[float]) -> float:
    """Sum of ln(rate in bit/s), a rate below 1 bit/s counting 0 — the run summary's
    ``log_utility`` (DiffQ §6.1)."""
    return float(sum(math.log(r) if r >= 1.0 else 0.0 for r in rates_bps))


def fraction_utility(measured_bps: Union[Sequence[float], np.ndarray],
                     optimal_bps: Union[Sequence[float], np.ndarray]) -> float:
    """``exp((U - U*) / N)``: the geometric mean over the flows of measured/optimal rate, each
    utility a sum of ln(rate in bit/s) with rates below 1 bit/s counted as 1 bit/s (as
    :func:`log_utility`). At most 1 when ``optimal_bps`` is the proportional-fair optimum of a
    model that holds for the measured rates."""
    n = len(optimal_bps)
    if n == 0 or len(measured_bps) != n:
        return float("nan")
    return math.exp((log_utility(measured_bps) - log_utility(optimal_bps)) / n)


class _Problem:
    """The master problem's data: which links matter, the flows' airtime coefficients."""

    def __init__(self, m: Mapping[str, Any], routing: str, backoff: str) -> None:
        links = m["links"]
        if "backoff_s" not in links:
            raise XlayerError("the installed xlayer core is older than xlayer.optimum (its "
                              "oracle model has no backoff_s): rebuild and reinstall the package")
        self.flows = list(m["flows"])
        self.routing = routing
        n_links = len(links["from"])
        for i, f in enumerate(self.flows):
            if routing == "static" and not f["route"]:
                raise XlayerError(f"flows[{i}]: flow {f['flow']} has no route to its destination")
        if routing == "static":
            used = sorted({k for f in self.flows for k in f["route"]})
        else:
            used = list(range(n_links))
        self.links = used  # global link indices the master constrains
        self.local = {k: i for i, k in enumerate(used)}
        self.src = np.asarray([links["from"][k] for k in used], dtype=int)
        self.dst = np.asarray([links["to"][k] for k in used], dtype=int)
        self.nodes = int(m["nodes"])
        # packets per second of each used link for each packet size (the bound, or with the
        # lone DCF sender's mean backoff added to every attempt)
        cap = np.asarray([links["capacity_pps"][k] for k in used], dtype=float).reshape(
            len(used), -1)
        if backoff == "mean":
            attempt = np.asarray([links["attempt_s"][k] for k in used], dtype=float).reshape(
                len(used), -1)
            back = np.asarray([links["backoff_s"][k] for k in used], dtype=float)[:, None]
            cap = cap * attempt / (attempt + back)
        # airtime (s) one Mbit of flow f takes on link l: 1e6 / (payload bits * packets/s)
        sizes = np.asarray([f["size"] for f in self.flows], dtype=int)
        bits = np.asarray([f["payload_bits"] for f in self.flows], dtype=float)
        with np.errstate(divide="ignore"):
            per_flow = cap[:, sizes].T if len(used) else np.zeros((len(self.flows), 0))
            self.air = np.where(per_flow > 0, 1e6 / (bits[:, None] * per_flow), np.inf)
        # conflict adjacency among the used links
        conf = [(self.local[a], self.local[b]) for a, b in m["conflicts"]
                if a in self.local and b in self.local]
        self.conflicts = conf
        n = len(used)
        self.adjacent = np.zeros((n, n), dtype=bool)
        if conf:
            e = np.asarray(conf, dtype=int)
            self.adjacent[e[:, 0], e[:, 1]] = True
            self.adjacent[e[:, 1], e[:, 0]] = True
        self.cliques = _Cliques(self.adjacent)
        self._frontier: Optional[np.ndarray] = None
        self._frontier_checked = False
        # out-links of each node (local indices), for the cheapest paths of the bound
        self.out: List[List[int]] = [[] for _ in range(self.nodes)]
        for li, a in enumerate(self.src):
            self.out[int(a)].append(li)

    @property
    def n_links(self) -> int:
        return len(self.links)

    @property
    def frontier_order(self) -> Optional[np.ndarray]:
        """An order of the links along which the exact pricing's dynamic programming
        (:func:`_frontier_mwis`) fits for every set of priced links (it fits for all of them,
        and a subset's frontier along the same order holds fewer links and independent sets),
        or None: the pricing is then the MILP. Of reverse Cuthill-McKee and the frontier
        grown greedily from either end of it (:func:`_narrow_order`), the one whose dynamic
        programming over every link keeps the fewest states."""
        if not self._frontier_checked:
            self._frontier_checked = True
            n = self.n_links
            if FRONTIER_STATES and n:
                from scipy.sparse.csgraph import reverse_cuthill_mckee

                rcm = np.asarray(reverse_cuthill_mckee(
                    sparse.csr_matrix(self.adjacent.astype(np.int8)), symmetric_mode=True),
                    dtype=int)
                best = None
                orders = [rcm]
                # the greedy orders narrowed more-testbed's frontier by a third, not more:
                # not tried where reverse Cuthill-McKee's is twice too wide (the 108-node
                # scenarios: 829 links)
                if _frontier_width(self.adjacent, rcm) <= 128 * FRONTIER_WORDS:
                    orders += [_narrow_order(self.adjacent, rcm[::-1]),
                               _narrow_order(self.adjacent, rcm)]
                    from scipy.sparse.csgraph import breadth_first_order

                    csr = sparse.csr_matrix(self.adjacent.astype(np.int8))
                    for i in range(FRONTIER_ORDERS):
                        bfs = breadth_first_order(csr, int(rcm[(i * n) // FRONTIER_ORDERS]),
                                                  directed=False, return_predecessors=False)
                        # the links of other components after it, along reverse Cuthill-McKee
                        rest = np.ones(n, dtype=bool)
                        rest[bfs] = False
                        orders.append(_narrow_order(self.adjacent, np.concatenate(
                            [bfs, rcm[rest[rcm]]]).astype(int)))
                for order in orders:
                    if _frontier_width(self.adjacent, order) > 64 * FRONTIER_WORDS:
                        continue
                    kept: Dict[str, int] = {}
                    if _frontier_mwis(self.adjacent, np.ones(n), FRONTIER_STATES, order, kept,
                                      budget=math.inf if best is None else best[0]
                                      ) is not None:
                        best = (kept["states"], order)
                if best is not None:
                    self._frontier = best[1]
        return self._frontier

    def shortest_path(self, fi: int, weight: np.ndarray
                      ) -> Tuple[Optional[Tuple[int, ...]], float]:
        """The path of flow ``fi`` of least total ``weight`` (>= 0 per local link, inf on the
        links that cannot carry its packets), fewest hops among equals (Dijkstra), and its
        weight; (None, inf) when there is none."""
        f = self.flows[fi]
        src, dst = int(f["src"]), int(f["dst"])
        best: Dict[int, Tuple[float, int]] = {src: (0.0, 0)}
        via: Dict[int, int] = {}
        heap = [(0.0, 0, src)]
        done = set()
        while heap:
            cost, hops, node = heapq.heappop(heap)
            if node in done:
                continue
            done.add(node)
            if node == dst:
                break
            for li in self.out[node]:
                w = weight[li]
                if not w < math.inf:
                    continue
                nxt = int(self.dst[li])
                key = (cost + float(w), hops + 1)
                if nxt not in done and (nxt not in best or key < best[nxt]):
                    best[nxt] = key
                    via[nxt] = li
                    heapq.heappush(heap, (key[0], key[1], nxt))
        if dst not in done:
            return None, math.inf
        path = []
        node = dst
        while node != src:
            li = via[node]
            path.append(li)
            node = int(self.src[li])
        return tuple(reversed(path)), best[dst][0]


def _route_matrix(p: _Problem) -> sparse.csr_matrix:
    """Static routes: the flows' airtime on each used link (links x flows; variable f is y_f)."""
    r, c, v = [], [], []
    for fi, f in enumerate(p.flows):
        for k in f["route"]:
            li = p.local[k]
            r.append(li)
            c.append(fi)
            v.append(p.air[fi, li])
    return sparse.csr_matrix((v, (r, c)), shape=(p.n_links, len(p.flows)))


def _commodities(p: _Problem) -> Tuple[str, List[List[int]]]:
    """Flows merged into commodities of the multi-commodity flow without changing its optimum:
    flows of one packet size to one destination (or from one source) share a commodity, since
    a flow to one sink from several sources decomposes into paths from each source carrying
    exactly its supply (flow decomposition), and the flows' airtime on a link depends only on
    their packet size. Returns ("dst" or "src", whichever gives fewer, and the flows of each
    commodity)."""
    best: Tuple[str, List[List[int]]] = ("dst", [])
    for end in ("dst", "src"):
        groups: Dict[Tuple[int, int], List[int]] = {}
        for fi, f in enumerate(p.flows):
            groups.setdefault((int(f[end]), int(f["size"])), []).append(fi)
        if not best[1] or len(groups) < len(best[1]):
            best = (end, list(groups.values()))
    return best


def _arc_form(p: _Problem, allowed: Optional[Sequence[np.ndarray]] = None
              ) -> Tuple[sparse.csr_matrix, sparse.csr_matrix, int]:
    """Multipath in link form over commodities (:func:`_commodities`): variables y_f, then
    the rate z_cl of commodity c on each link l it can use (finite airtime; not out of its
    sink, nor into its source when it has one), commodity by commodity. Returns the airtime
    matrix (links x variables), the conservation rows (out - in of commodity c at node v =
    the rates of its flows starting there, minus those ending there; the row of its one
    common end is left out, implied by the others: dependent equality rows make the conic
    solver fail, as Clarabel did on dclo-dense) and the number of variables."""
    nf = len(p.flows)
    end, groups = _commodities(p)
    zc, zl = [], []
    for ci, members in enumerate(groups):
        f0 = p.flows[members[0]]
        usable = np.isfinite(p.air[members[0]])
        if allowed is not None:
            usable &= allowed[ci]
        if end == "dst":
            usable &= p.src != int(f0["dst"])
        else:
            usable &= p.dst != int(f0["src"])
        if len(members) == 1:  # one flow: nothing comes back into its source either
            usable &= (p.dst != int(f0["src"])) & (p.src != int(f0["dst"]))
        li = np.flatnonzero(usable)
        zc.append(np.full(len(li), ci))
        zl.append(li)
    zc_a = np.concatenate(zc) if zc else np.zeros(0, dtype=int)
    zl_a = np.concatenate(zl) if zl else np.zeros(0, dtype=int)
    nvars = nf + len(zl_a)
    var = nf + np.arange(len(zl_a))
    rep = np.asarray([g[0] for g in groups], dtype=int)[zc_a]  # a flow of each variable's commodity
    air = sparse.csr_matrix((p.air[rep, zl_a], (zl_a, var)), shape=(p.n_links, nvars))
    nodes = p.nodes
    flow_c = np.empty(nf, dtype=int)
    for ci, members in enumerate(groups):
        flow_c[members] = ci
    rows = np.concatenate([zc_a * nodes + p.src[zl_a], zc_a * nodes + p.dst[zl_a],
                           flow_c * nodes + [f["src"] for f in p.flows],
                           flow_c * nodes + [f["dst"] for f in p.flows]])
    cols = np.concatenate([var, var, np.arange(nf), np.arange(nf)])
    vals = np.concatenate([np.ones(len(zl_a)), -np.ones(len(zl_a)), -np.ones(nf), np.ones(nf)])
    common = np.asarray([int(p.flows[g[0]][end]) for g in groups], dtype=int)
    drop = np.arange(len(groups)) * nodes + common
    keep = ~np.isin(rows, drop)
    rows, cols, vals = rows[keep], cols[keep], vals[keep]
    used, rows = np.unique(rows, return_inverse=True)
    eq = sparse.csr_matrix((vals, (rows, cols)), shape=(len(used), nvars))
    return air, eq, nvars


class _Master:
    """The restricted master problem over a growing list of columns (independent sets) and,
    under multi-path routing, of the links each commodity may use.

    Free multi-path routing is a multi-commodity flow in link form: a rate per commodity
    (:func:`_commodities`) and link, with conservation at every node. Over every link
    (``form`` "links") it grows with commodities x links: 24,400 variables on dpclo-fig9, 25 s
    a Clarabel solve. Above :data:`ARC_LIMIT` each commodity gets only the links of the paths generated so far ("generated
    links"), a link constraint only for the links some commodity may use (the others carry
    nothing, their price is 0), and conservation only at the nodes they touch. A path joins
    when its price at the master's link prices (airtime x price over its links: Dijkstra, the
    same cheapest path the Lagrangian bound uses) is below what a unit of its flow is worth
    in the master (1/y_f for the log utility, 1 for the aggregate, the dual of y_f >= t for
    max-min), the pricing of the multi-commodity flow's conservation constraints; when none
    does, the master is the optimum over every link. A commodity's generated links form a
    network, so the master routes over any combination of its paths' links, not only over
    the paths themselves (a path form, a variable per path, took 75 iterations and 1264 paths
    where this takes 43 and 600 for the same value on dpclo-fig9's proportional fairness)."""

    def __init__(self, p: _Problem, objective: str, form: Optional[str] = None) -> None:
        self.p = p
        self.objective = objective
        #: the solver's status of the last master problem ("optimal", or "optimal_inaccurate"
        #: when Clarabel stopped short of its tolerances)
        self.status = "optimal"
        #: what a unit (Mbit/s) of each flow's rate is worth in the last master (its dual)
        self.worth = np.ones(len(p.flows))
        #: the aggregate objective's weight of each flow (all 1: the aggregate; 1/y_f at a
        #: proportional-fair point: its certificate, :func:`_certify`)
        self.weights = np.ones(len(p.flows))
        #: each column's time share in the last master
        self.shares = np.zeros(0)
        #: the proportional-fair master's stabilisation (:data:`PROX`): link prices it is
        #: drawn towards (None: none), and the weight of the quadratic penalty
        self.center: Optional[np.ndarray] = None
        self.prox = 0.0
        #: the paths generated (flow, local links), in the "generated links" form
        self.paths: List[Tuple[int, Tuple[int, ...]]] = []
        self._known_paths: set = set()
        self.eq_a: Optional[sparse.csr_matrix] = None
        #: "routes" (static), "links" or "generated links" (multipath)
        self.form = "routes"
        #: per commodity, the links it may use ("generated links")
        self.allowed: Optional[List[np.ndarray]] = None
        self._built = -1
        self._rows = np.arange(p.n_links)
        #: the linear masters' HiGHS model kept warm across iterations (:class:`_WarmLP`;
        #: False without highspy)
        self._warm: Any = None
        if p.routing == "static":
            self.flow_mat = _route_matrix(p)
            return
        air, eq, nvars = _arc_form(p)
        self.form = form or ("links" if nvars - len(p.flows) <= ARC_LIMIT else "generated links")
        if self.form == "links":
            self.flow_mat, self.eq_a = air, eq
        else:
            _, groups = _commodities(p)
            self.commodity = np.empty(len(p.flows), dtype=int)
            for ci, members in enumerate(groups):
                self.commodity[members] = ci
            self.allowed = [np.zeros(p.n_links, dtype=bool) for _ in groups]
        for fi in range(len(p.flows)):
            weight = np.where(np.isfinite(p.air[fi]), p.air[fi], np.inf)
            path, _ = p.shortest_path(fi, weight)  # least airtime
            if path is None:
                f = p.flows[fi]
                raise XlayerError(f"flows[{fi}]: flow {f['flow']} has no path of links "
                                  f"from node {f['src']} to node {f['dst']}")
            if self.allowed is not None:
                self.add_path(fi, path)

    def add_path(self, fi: int, path: Sequence[int]) -> bool:
        """Lets flow ``fi``'s commodity use the links of ``path`` (local links) unless the path
        is known; whether it was new."""
        key = (fi, tuple(path))
        if key in self._known_paths:
            return False
        assert self.allowed is not None
        self._known_paths.add(key)
        self.paths.append(key)
        self.allowed[self.commodity[fi]][list(path)] = True
        return True

    def improving_paths(self, mu: np.ndarray) -> Tuple[np.ndarray, int]:
        """Multipath: each flow's cheapest path at link prices ``mu`` and its price (the d of
        the Lagrangian bound); in the "generated links" form the paths cheaper than the flow
        is worth join the master. Returns (the prices d, how many paths joined)."""
        p = self.p
        d = np.empty(len(p.flows))
        added = 0
        for fi in range(len(p.flows)):
            with np.errstate(invalid="ignore"):
                w = np.where(np.isfinite(p.air[fi]), p.air[fi] * mu, np.inf)
            path, d[fi] = p.shortest_path(fi, w)
            if (self.allowed is not None and path is not None
                    and d[fi] < self.worth[fi] * (1.0 - TOLERANCE)):
                added += self.add_path(fi, path)
        return d, added

    def _flows(self) -> Tuple[sparse.csr_matrix, np.ndarray]:
        """(airtime matrix, links x flow variables, over the constrained links; the local
        links constrained)."""
        if self.allowed is not None and self._built != len(self.paths):
            air, self.eq_a, _ = _arc_form(self.p, self.allowed)
            self._rows = np.flatnonzero(np.diff(air.indptr))
            self.flow_mat = air[self._rows]
            self._built = len(self.paths)
        return self.flow_mat, self._rows

    def _eq(self, more: int) -> sparse.csr_matrix:
        """The link form's conservation rows, with zeros for ``more`` variables after it."""
        assert self.eq_a is not None
        return sparse.hstack([self.eq_a, sparse.csr_matrix((self.eq_a.shape[0], more))]).tocsr()

    def solve(self, columns: Sequence[Tuple[int, ...]]
              ) -> Tuple[np.ndarray, np.ndarray, float, float]:
        """Returns (flow rates in Mbit/s, link prices mu >= 0, price of time sigma, value)."""
        if self.objective == "proportional":
            out = _solve_conic([self.prepare(columns)])[0]
            if isinstance(out, XlayerError):
                raise out
            return out
        if WARM_LP:
            if self._warm is None:
                hc = _highs_class()
                self._warm = _WarmLP(hc, self) if hc is not None else False
            if self._warm:
                out = self._warm.solve(columns)
                if out is not None:
                    y, mu, sigma, value, self.shares = out
                    if self.objective == "aggregate":
                        self.worth = self.weights
                    return y, mu, sigma, value
        flow_mat, rows, col_mat, link_a, time_a = self._matrices(columns)
        return self._linear(columns, flow_mat, rows, link_a, time_a)

    def _matrices(self, columns: Sequence[Tuple[int, ...]]
                  ) -> Tuple[sparse.csr_matrix, np.ndarray, sparse.csr_matrix,
                             sparse.csr_matrix, sparse.csr_matrix]:
        """The master's matrices over ``columns``: (flow airtime, the constrained links, the
        columns' negated link incidence, link rows over all variables, the time row)."""
        p = self.p
        nc = len(columns)
        flow_mat, rows = self._flows()
        nflowvars = flow_mat.shape[1]
        nrows = len(rows)
        extra = 1 if self.objective == "maxmin" else 0
        nvars = nflowvars + nc + extra
        cr = np.fromiter((li for col in columns for li in col), dtype=int)
        cc = np.repeat(np.arange(nc), [len(col) for col in columns])
        col_mat = sparse.csr_matrix((-np.ones(len(cr)), (cr, cc)), shape=(p.n_links, nc))
        if nrows != p.n_links:
            col_mat = col_mat[rows]
        blocks = [flow_mat, col_mat]
        if extra:
            blocks.append(sparse.csr_matrix((nrows, 1)))
        link_a = sparse.hstack(blocks).tocsr()
        time_a = sparse.csr_matrix(
            (np.ones(nc), (np.zeros(nc, dtype=int), nflowvars + np.arange(nc))),
            shape=(1, nvars))
        return flow_mat, rows, col_mat, link_a, time_a

    def prepare(self, columns: Sequence[Tuple[int, ...]]) -> "_Conic":
        """The proportional-fair master over ``columns``, stabilised as :attr:`center` and
        :attr:`prox` say now, built and compiled for Clarabel (:func:`_solve_conic` solves
        it)."""
        cp = require_solver()
        nf = len(self.p.flows)
        flow_mat, rows, col_mat, link_a, time_a = self._matrices(columns)
        nrows = len(rows)
        nvars = link_a.shape[1]
        x = cp.Variable(nvars)
        # the sum of logs (exponential cones); the geometric mean (second-order cones, the same
        # optimum) took a few per cent less a master but its prices stalled the generation
        # (dpclo-fig9 at a gap of 0.245 per flow after 85 iterations; README, tried table)
        objective = cp.sum(cp.log(x[:nf]))
        stab = self.center is not None and self.prox > 0
        if stab:
            assert self.center is not None  # stab says so
            slack = cp.Variable(nrows)
            link_c = link_a @ x - slack <= 0
            objective = (objective - self.center[rows] @ slack
                         - (self.prox / 2.0) * cp.sum_squares(slack))
        else:
            link_c = link_a @ x <= 0
        time_c = time_a @ x <= 1
        cons = [link_c, time_c, x >= 0]
        if self.eq_a is not None:
            cons.append(self._eq(len(columns)) @ x == 0)
        prob = cp.Problem(cp.Maximize(objective), cons)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            data, chain, inverse = prob.get_problem_data(cp.CLARABEL,
                                                         solver_opts=dict(CLARABEL_RETRIES[0]))
        return _Conic(self, prob, x, link_c, time_c, flow_mat, rows, col_mat, len(columns),
                      stab, data, chain, inverse)

    def finish(self, c: "_Conic") -> Tuple[np.ndarray, np.ndarray, float, float]:
        """The results of the proportional-fair master ``c``, solved (:func:`_solve_conic`);
        sets :attr:`status`, :attr:`shares` and :attr:`worth` as :meth:`solve` does."""
        prob = c.prob
        if prob.status not in ("optimal", "optimal_inaccurate"):
            raise XlayerError(f"oracle: the proportional-fair master problem is {prob.status}")
        nf = len(self.p.flows)
        nflowvars = c.flow_mat.shape[1]
        self.status = str(prob.status)
        xv = np.maximum(np.asarray(c.x.value), 0.0)
        self.shares = xv[nflowvars:nflowvars + c.nc]
        y = xv[:nf]
        mu = np.zeros(self.p.n_links)
        mu[c.rows] = np.maximum(np.asarray(c.link_c.dual_value).ravel(), 0.0)
        sigma = float(np.asarray(c.time_c.dual_value).ravel()[0])
        with np.errstate(divide="ignore"):
            self.worth = np.where(y > 0, 1.0 / y, np.inf)
        if not c.stab:
            return y, mu, sigma, float(prob.value)
        # the stabilised master's rates may overload links by the slack: scaled down by
        # the largest overload, they are feasible, and their utility a lower bound
        load = c.flow_mat @ xv[:nflowvars]
        cap = -(c.col_mat @ self.shares)
        over = load > cap * (1.0 + 1e-12)
        alpha = float(np.min(cap[over] / load[over])) if over.any() else 1.0
        if not alpha > 0:
            return y * 0.0, mu, sigma, -math.inf
        y = y * min(alpha, 1.0)
        return y, mu, sigma, float(np.sum(np.log(np.maximum(y, 1e-300))))

    def _linear(self, columns: Sequence[Tuple[int, ...]], flow_mat: sparse.csr_matrix,
                rows: np.ndarray, link_a: sparse.csr_matrix, time_a: sparse.csr_matrix
                ) -> Tuple[np.ndarray, np.ndarray, float, float]:
        """The aggregate or max-min master solved anew by ``linprog`` (without highspy)."""
        p = self.p
        nf = len(p.flows)
        nc = len(columns)
        nflowvars = flow_mat.shape[1]
        nrows = len(rows)
        extra = 1 if self.objective == "maxmin" else 0
        nvars = link_a.shape[1]
        mu = np.zeros(p.n_links)
        cost = np.zeros(nvars)
        if self.objective == "aggregate":
            self.worth = self.weights
            cost[:nf] = -self.weights
        else:
            cost[-1] = -1.0
        a_ub = [link_a, time_a]
        b_ub = [np.zeros(nrows), np.ones(1)]
        if self.objective == "maxmin":  # t - y_f <= 0
            ys = sparse.eye(nf, nflowvars, format="csr")
            t_rows = sparse.hstack([-ys, sparse.csr_matrix((nf, nc)),
                                    sparse.csr_matrix(np.ones((nf, 1)))]).tocsr()
            a_ub.append(t_rows)
            b_ub.append(np.zeros(nf))
        eq_a = self._eq(nc + extra) if self.eq_a is not None else None
        res = linprog(cost, A_ub=sparse.vstack(a_ub).tocsr(), b_ub=np.concatenate(b_ub),
                      A_eq=eq_a, b_eq=np.zeros(eq_a.shape[0]) if eq_a is not None else None,
                      bounds=(0, None), method="highs")
        if res.status != 0:
            raise XlayerError(f"oracle: the {self.objective} master problem failed: "
                              f"{res.message}")
        xv = res.x
        self.shares = xv[nflowvars:nflowvars + nc]
        y = xv[:nf]
        mu[rows] = np.maximum(-res.ineqlin.marginals[:nrows], 0.0)
        sigma = float(-res.ineqlin.marginals[nrows])
        if self.objective == "maxmin":
            self.worth = np.maximum(-res.ineqlin.marginals[nrows + 1:], 0.0)
        return y, mu, sigma, float(-res.fun)


@dataclass
class _Conic:
    """A proportional-fair master built and compiled (:meth:`_Master.prepare`), and what
    :meth:`_Master.finish` reads back from it."""
    master: "_Master"
    prob: Any
    x: Any
    link_c: Any
    time_c: Any
    flow_mat: sparse.csr_matrix
    rows: np.ndarray
    col_mat: sparse.csr_matrix
    nc: int
    stab: bool
    data: Any
    chain: Any
    inverse: Any
    #: what Clarabel returned for the first settings of :data:`CLARABEL_RETRIES`, or the
    #: exception it raised
    solution: Any = None


def _clarabel(c: _Conic) -> None:
    """Clarabel on ``c``'s compiled problem, with the first settings of
    :data:`CLARABEL_RETRIES` (run in a thread by :func:`_solve_conic`: it touches no state
    but ``c``'s)."""
    try:
        c.solution = c.chain.solve_via_data(c.prob, c.data, True, False,
                                            dict(CLARABEL_RETRIES[0]))
    except Exception as e:  # noqa: BLE001 - re-raised or retried in the main thread
        c.solution = e


def _solve_conic(masters: Sequence[_Conic]
                 ) -> List[Union[Tuple[np.ndarray, np.ndarray, float, float], XlayerError]]:
    """Solves prepared proportional-fair masters, at once in threads when there are several
    and :data:`PARALLEL` (Clarabel releases the GIL), and returns, in their order, what
    :meth:`_Master.solve` would return for each, or the :class:`XlayerError` it would raise.
    The results are those of solving them one after the other: each was compiled before
    (cvxpy's variable numbering is the same), only Clarabel runs in the threads, and each is
    read back in order in this thread; a master the first settings fail is solved again by
    the next ones of :data:`CLARABEL_RETRIES` here."""
    cp = require_solver()
    threads = []
    if PARALLEL and len(masters) > 1:
        for c in masters[:-1]:
            t = threading.Thread(target=_clarabel, args=(c,), daemon=True)
            t.start()
            threads.append(t)
    for c in masters[len(threads):]:
        _clarabel(c)
    for t in threads:
        t.join()
    out: List[Union[Tuple[np.ndarray, np.ndarray, float, float], XlayerError]] = []
    for c in masters:
        prob = c.prob
        failed: Optional[BaseException] = None
        with warnings.catch_warnings():
            # an inaccurate solution is reported in the summary (solver_status)
            warnings.simplefilter("ignore", UserWarning)
            if isinstance(c.solution, BaseException):
                failed = c.solution
            else:
                try:
                    prob.unpack_results(c.solution, c.chain, c.inverse)
                except cp.error.SolverError as e:
                    failed = e
            if failed is not None and not isinstance(failed, cp.error.SolverError):
                raise failed
            for options in CLARABEL_RETRIES[1:]:
                if failed is None:
                    break
                try:
                    prob.solve(solver=cp.CLARABEL, **options)
                    failed = None
                except cp.error.SolverError as e:
                    failed = e
        if failed is not None:
            out.append(XlayerError(
                f"oracle: Clarabel could not solve the proportional-fair master problem "
                f"({str(failed).splitlines()[0]}); --objective aggregate or maxmin solves the "
                "linear ones"))
            continue
        try:
            out.append(c.master.finish(c))
        except XlayerError as e:
            out.append(e)
    return out


def _highs_class() -> Any:
    """highspy's HiGHS (in the ``oracle`` extra, and a dependency of cvxpy), or None.
    Its bare core module: the ``highspy.Highs`` wrapper prints HiGHS's banner when made. The
    module is highspy's own layout, not its documented API, so a highspy without what
    :class:`_WarmLP` uses counts as no highspy (the masters are then solved anew by
    ``linprog``) rather than failing."""
    try:
        from highspy import _core as hc
    except ImportError:
        return None
    if all(hasattr(hc, name) for name in ("_Highs", "kHighsInf", "HighsModelStatus")):
        return hc
    return None


class _WarmLP:
    """The linear masters (aggregate, max-min) as one HiGHS LP kept across the iterations of a
    column generation: new independent sets, newly allowed commodity-link rates and the rows
    they touch are added to it. Solved by HiGHS's interior point without crossover
    (:data:`LINEAR_SOLVER`), whose prices lie near the centre of a degenerate master's optimal
    duals, or by its simplex from the last optimal basis (a new column nonbasic, a new row's
    slack basic). The simplex's prices move less between iterations than those of ``linprog``
    anew, and dpclo-fig9's aggregate reached its optimum in 75 iterations, where ``linprog``
    left it 17 % from its bound after 78; but a warm solve is not always faster: without presolve
    dpclo-fig8's (180 flows) took twice a fresh solve's simplex iterations, each dearer,
    1.3-3 s against 0.4-1 s. Every link has its row from the start (``-sum lambda_S <= 0`` for a link no
    commodity may use yet: it constrains nothing, and its price is read as 0, which keeps
    the other prices optimal for the master without it); conservation rows, one per
    commodity and node touched, are added as rates need them, the commodity's common end
    (:func:`_arc_form`) never. The same LP as :meth:`_Master.solve` builds for ``linprog``."""

    def __init__(self, hc: Any, master: "_Master") -> None:
        p = master.p
        self.hc = hc
        self.master = master
        self.h = hc._Highs()
        self.h.setOptionValue("output_flag", False)
        if LINEAR_SOLVER == "ipm":
            self.h.setOptionValue("solver", "ipm")
            self.h.setOptionValue("run_crossover", "off")
        elif LINEAR_SOLVER != "simplex":
            raise ValueError(f"LINEAR_SOLVER: {LINEAR_SOLVER!r} is not 'ipm' or 'simplex'")
        self.inf = hc.kHighsInf
        nf = len(p.flows)
        self.nf = nf
        L = p.n_links
        self.n_rows = 0
        self.n_cols = 0
        self.link_row = self._add_rows(np.full(L, -self.inf), np.zeros(L))
        self.time_row = int(self._add_rows(np.full(1, -self.inf), np.ones(1))[0])
        self.t_rows = (self._add_rows(np.full(nf, -self.inf), np.zeros(nf))
                       if master.objective == "maxmin" else np.zeros(0, dtype=int))
        self.cons_row: Dict[Tuple[int, int], int] = {}
        if master.eq_a is not None or master.allowed is not None:
            end, groups = _commodities(p)
            self.groups = groups
            self.rep = np.asarray([g[0] for g in groups], dtype=int)
            self.common = np.asarray([int(p.flows[g[0]][end]) for g in groups], dtype=int)
            self.end = end
            self.flow_c = np.empty(nf, dtype=int)
            for ci, members in enumerate(groups):
                self.flow_c[members] = ci
        else:
            self.groups = []
        self.z_col: Dict[Tuple[int, int], int] = {}
        self.set_col: Dict[Tuple[int, ...], int] = {}
        self.active: Dict[Tuple[int, ...], bool] = {}
        # the flow rates y_f: on their static routes, or at their ends' conservation rows
        rows: List[List[int]] = []
        vals: List[List[float]] = []
        for fi in range(nf):
            r: List[int] = []
            v: List[float] = []
            if p.routing == "static":
                dense = np.asarray(master.flow_mat[:, fi].todense()).ravel()
                nz = np.flatnonzero(dense)
                r += [int(self.link_row[k]) for k in nz]
                v += dense[nz].tolist()
            else:
                f = p.flows[fi]
                ci = int(self.flow_c[fi])
                for node, val in ((int(f["src"]), -1.0), (int(f["dst"]), 1.0)):
                    row = self._cons(ci, node)
                    if row is not None:
                        r.append(row)
                        v.append(val)
            if len(self.t_rows):
                r.append(int(self.t_rows[fi]))
                v.append(-1.0)
            rows.append(r)
            vals.append(v)
        self.used = np.zeros(p.n_links, dtype=bool)
        if p.routing == "static":
            self.used[np.flatnonzero(np.diff(master.flow_mat.tocsr().indptr))] = True
        cost = -master.weights if master.objective == "aggregate" else np.zeros(nf)
        self.y_col = self._add_cols(cost, rows, vals)
        self.weights = master.weights.copy()
        if master.objective == "maxmin":
            ones = [list(map(int, self.t_rows))]
            self.t_col = int(self._add_cols(np.full(1, -1.0), ones, [[1.0] * nf])[0])

    def _add_rows(self, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        n = len(lower)
        self.h.addRows(n, np.asarray(lower, dtype=float), np.asarray(upper, dtype=float), 0,
                       np.zeros(n, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        out = np.arange(self.n_rows, self.n_rows + n)
        self.n_rows += n
        return out

    def _cons(self, ci: int, node: int) -> Optional[int]:
        """The conservation row of commodity ``ci`` at ``node`` (made when first needed), or
        None at its common end."""
        if node == int(self.common[ci]):
            return None
        key = (ci, node)
        if key not in self.cons_row:
            self.cons_row[key] = int(self._add_rows(np.zeros(1), np.zeros(1))[0])
        return self.cons_row[key]

    def _add_cols(self, cost: np.ndarray, rows: List[List[int]], vals: List[List[float]]
                  ) -> np.ndarray:
        n = len(rows)
        if n == 0:
            return np.zeros(0, dtype=int)
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=n)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int32)
        idx = np.fromiter((i for r in rows for i in r), dtype=np.int32, count=int(lengths.sum()))
        val = np.fromiter((x for v in vals for x in v), dtype=float, count=int(lengths.sum()))
        self.h.addCols(n, np.asarray(cost, dtype=float), np.zeros(n), np.full(n, self.inf),
                       int(lengths.sum()), starts, idx, val)
        out = np.arange(self.n_cols, self.n_cols + n)
        self.n_cols += n
        return out

    def _usable(self) -> List[np.ndarray]:
        """Each commodity's usable links now, as :func:`_arc_form` takes them."""
        p = self.master.p
        out = []
        for ci, members in enumerate(self.groups):
            f0 = p.flows[members[0]]
            usable = np.isfinite(p.air[members[0]])
            if self.master.allowed is not None:
                usable &= self.master.allowed[ci]
            if self.end == "dst":
                usable &= p.src != int(f0["dst"])
            else:
                usable &= p.dst != int(f0["src"])
            if len(members) == 1:
                usable &= (p.dst != int(f0["src"])) & (p.src != int(f0["dst"]))
            out.append(np.flatnonzero(usable))
        return out

    def solve(self, columns: Sequence[Tuple[int, ...]]
              ) -> Optional[Tuple[np.ndarray, np.ndarray, float, float, np.ndarray]]:
        """(y, mu, sigma, value, shares) as :meth:`_Master.solve`'s LP, or None when HiGHS
        did not end optimal (the caller solves it cold)."""
        p = self.master.p
        m = self.master
        # new commodity-link rates: airtime on the link's row, out of its tail, into its head
        rows: List[List[int]] = []
        vals: List[List[float]] = []
        keys: List[Tuple[int, int]] = []
        for ci, links in enumerate(self._usable() if self.groups else []):
            rep = int(self.rep[ci])
            for li in links.tolist():
                if (ci, li) in self.z_col:
                    continue
                r = [int(self.link_row[li])]
                v = [float(p.air[rep, li])]
                for node, val in ((int(p.src[li]), 1.0), (int(p.dst[li]), -1.0)):
                    row = self._cons(ci, node)
                    if row is not None:
                        r.append(row)
                        v.append(val)
                rows.append(r)
                vals.append(v)
                keys.append((ci, li))
        for key, col in zip(keys, self._add_cols(np.zeros(len(rows)), rows, vals)):
            self.z_col[key] = int(col)
            self.used[key[1]] = True
        # new independent sets; those left out of ``columns`` held at 0
        want = dict.fromkeys(columns)
        new = [c for c in want if c not in self.set_col]
        added = self._add_cols(np.zeros(len(new)),
                               [[int(self.link_row[li]) for li in c] + [self.time_row]
                                for c in new],
                               [[-1.0] * len(c) + [1.0] for c in new])
        for c, col in zip(new, added):
            self.set_col[c] = int(col)
            self.active[c] = True
        for c, on in self.active.items():
            if on != (c in want):
                self.h.changeColBounds(self.set_col[c], 0.0, self.inf if c in want else 0.0)
                self.active[c] = c in want
        if m.objective == "aggregate" and not np.array_equal(m.weights, self.weights):
            self.h.changeColsCost(self.nf, self.y_col.astype(np.int32), -m.weights)
            self.weights = m.weights.copy()
        self.h.run()
        if self.h.getModelStatus() != self.hc.HighsModelStatus.kOptimal:
            return None
        sol = self.h.getSolution()
        x = np.asarray(sol.col_value)
        dual = np.asarray(sol.row_dual)
        y = x[self.y_col]
        # a link no commodity may use yet has no price (as if its row were not there)
        mu = np.where(self.used, np.maximum(-dual[self.link_row], 0.0), 0.0)
        sigma = float(-dual[self.time_row])
        shares = np.asarray([x[self.set_col[c]] for c in columns]) if len(columns) else np.zeros(0)
        if m.objective == "maxmin":
            m.worth = np.maximum(-dual[self.t_rows], 0.0)
        value = -float(self.h.getInfo().objective_function_value)
        return y, mu, sigma, value, shares


class _Cliques:
    """A cover of the conflict graph's edges by cliques, grown as the pricing needs it: the
    pricing MILP's constraints "at most one link of a clique" (far tighter than one
    constraint per edge) over the links of positive price. Each edge among those links not
    yet in a clique grows one, taking first the priced links adjacent to all of it (dearest
    first), then any link (the most conflicting first) so that it serves later prices too."""

    def __init__(self, adjacent: np.ndarray) -> None:
        self.adjacent = adjacent
        n = len(adjacent)
        self.covered = np.zeros((n, n), dtype=bool)
        self.degree = adjacent.sum(axis=1).astype(float)
        self.rows: List[np.ndarray] = []
        self._matrix: Optional[sparse.csc_matrix] = None

    def among(self, cand: np.ndarray, weights: np.ndarray) -> sparse.csr_matrix:
        """The cliques restricted to the links ``cand`` (rows with two links or more), as a
        0/1 matrix over ``cand``: every edge among them is in one."""
        adj = self.adjacent
        n = len(adj)
        sub = np.triu(adj[np.ix_(cand, cand)] & ~self.covered[np.ix_(cand, cand)], 1)
        ia, ib = np.nonzero(sub)
        if len(ia):
            # priced links before the others, then by price / by conflicts
            key = self.degree / (1.0 + self.degree.max())
            key[cand] = 2.0 + weights[cand] / max(float(weights[cand].max()), 1e-300)
            for a, b in zip(cand[ia].tolist(), cand[ib].tolist()):
                if self.covered[a, b]:
                    continue
                members = [a, b]
                common = adj[a] & adj[b]
                while True:
                    nxt = np.flatnonzero(common)
                    if not len(nxt):
                        break
                    w = int(nxt[np.argmax(key[nxt])])
                    members.append(w)
                    common &= adj[w]
                c = np.asarray(sorted(members))
                self.covered[np.ix_(c, c)] = True
                self.rows.append(c)
            self._matrix = None
        if self._matrix is None:
            if self.rows:
                r = np.repeat(np.arange(len(self.rows)), [len(c) for c in self.rows])
                self._matrix = sparse.csc_matrix(
                    (np.ones(len(r)), (r, np.concatenate(self.rows))), shape=(len(self.rows), n))
            else:
                self._matrix = sparse.csc_matrix((0, n))
        m = self._matrix[:, cand].tocsr()
        keep = np.diff(m.indptr) >= 2
        return m[keep]


def _leaves_at(adjacent: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The step after which each link leaves the frontier of :func:`_frontier_mwis` (links
    taken at steps ``pos``): that of its last neighbour, or its own. Over the conflicts, not
    an n x n array of steps (8 bytes a pair of links: 200 MB at 5000 links)."""
    last = pos.copy()
    rows, cols = np.nonzero(adjacent)
    np.maximum.at(last, rows, pos[cols])
    return last


def _frontier_width(adjacent: np.ndarray, order: np.ndarray) -> int:
    """The most links in the frontier of :func:`_frontier_mwis` along ``order``."""
    n = len(order)
    if n == 0:
        return 0
    pos = np.empty(n, dtype=int)
    pos[order] = np.arange(n)
    return _width(pos, _leaves_at(adjacent, pos))


def _width(pos: np.ndarray, last: np.ndarray) -> int:
    """The most links in the frontier, links taken at steps ``pos`` leaving after ``last``."""
    n = len(pos)
    ends = np.bincount(last, minlength=n)
    return int((np.cumsum(np.bincount(pos, minlength=n) - ends) + ends).max())


def _narrow_order(adjacent: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """An order of the links for :func:`_frontier_mwis`, grown greedily: each step takes the
    link that leaves the narrowest frontier (the links taken that conflict with one not
    yet taken), the earliest in ``rank`` (an order of the links) among equals. Along
    Cuthill-McKee (reverse Cuthill-McKee reversed), more-testbed under multi-path routing has
    a frontier of 48 links and 250,000 states where reverse Cuthill-McKee's has 68 and
    2,000,000; on mesh-7x7 both have 50."""
    n = len(adjacent)
    at = np.empty(n, dtype=int)
    at[rank] = np.arange(n)
    open_ = adjacent.sum(axis=1)  # neighbours not yet taken
    taken = np.zeros(n, dtype=bool)
    front = np.zeros(n, dtype=bool)
    order = np.empty(n, dtype=int)
    for k in range(n):
        cand = np.flatnonzero(~taken)
        # a candidate joins the frontier unless all its neighbours are taken, and the
        # frontier links whose last open neighbour it is leave it
        closing = adjacent[np.ix_(cand, np.flatnonzero(front & (open_ == 1)))].sum(axis=1)
        grows = (open_[cand] > 0).astype(int) - closing
        v = int(cand[np.lexsort((at[cand], grows))[0]])
        order[k] = v
        taken[v] = True
        open_[np.flatnonzero(adjacent[v])] -= 1
        front[v] = True
        front &= open_ > 0
    return order


def _frontier_mwis(adjacent: np.ndarray, w: np.ndarray, limit: int,
                   order: Optional[np.ndarray] = None, stats: Optional[Dict[str, int]] = None,
                   words: int = 1, more: Optional[List[Tuple[float, List[int]]]] = None,
                   count: int = 0, budget: float = math.inf
                   ) -> Optional[Tuple[float, List[int]]]:
    """An exact maximum-weight independent set by dynamic programming along an order of the
    links (reverse Cuthill-McKee, which keeps conflicting links close in it): the links are
    taken in that order, each state is an independent set of the "frontier" (the links taken
    that still conflict with one to come: only they constrain what follows) and holds the
    heaviest independent set of the links taken that leaves it; a link joins every state it
    conflicts with none of, and a link leaves the frontier once its last neighbour is taken,
    the states that then coincide keeping the heaviest. A state is a bit mask, a bit per
    frontier link, in one uint64 or, for a frontier of up to 64 x :data:`FRONTIER_WORDS`
    links, in that many (more-testbed under multi-path routing has 68 along reverse
    Cuthill-McKee, but 2,000,000 states there; 52 along the order of fewest states it is
    priced along, :data:`FRONTIER_ORDERS`); the heaviest final state is the heaviest set.
    Exact (sums of the weights, as the MILP's objective) and fast where the conflict graph is narrow along some order, as on a grid
    (mesh-7x7 under multi-path routing: a frontier of 50 links, 17,000 states, 45 ms where
    HiGHS's MILP took 0.9 s, all of it in its root node). None when the frontier would
    exceed 64 x :data:`FRONTIER_WORDS` links, the states of a step ``limit`` or those of all
    steps (kept to rebuild the set) 50 times it (the caller then solves the MILP). ``stats``
    gets the states of all steps (``"states"``); ``words``: at least that many words a state
    (the tests check two on small graphs). ``more`` gets up to ``count`` more independent
    sets, (weight, links), the heaviest of the last step's other states (each a different
    set, heaviest first). None too once the states of all steps exceed ``budget`` (an order
    is being chosen)."""
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    n = len(w)
    if n == 0:
        return 0.0, []
    if order is None:
        order = np.asarray(reverse_cuthill_mckee(sparse.csr_matrix(adjacent.astype(np.int8)),
                                                 symmetric_mode=True), dtype=int)
    pos = np.empty(n, dtype=int)
    pos[order] = np.arange(n)
    last = _leaves_at(adjacent, pos)
    words = max(words, -(-_width(pos, last) // 64))
    if words > FRONTIER_WORDS:
        return None
    leaving: List[List[int]] = [[] for _ in range(n)]
    for i in range(n):
        leaving[int(last[i])].append(i)
    bit: Dict[int, int] = {}
    # the bits in turn from each word (so that a small graph checked with ``words=2`` uses
    # both)
    free = [(i % words) * 64 + i // words for i in range(64 * words - 1, -1, -1)]
    one = np.uint64(1)
    # a state is a row of ``words`` uint64s; bit b is bit b % 64 of word b // 64
    states = np.zeros((1, words), dtype=np.uint64)
    value = np.zeros(1)
    steps: List[Tuple[np.ndarray, np.ndarray]] = []  # per step: each state's parent, and took
    kept = 0

    def flag(b: int) -> np.ndarray:
        m = np.zeros(words, dtype=np.uint64)
        m[b // 64] = one << np.uint64(b % 64)
        return m

    for k in range(n):
        v = int(order[k])
        b = free.pop()
        bit[v] = b
        mask = np.zeros(words, dtype=np.uint64)
        for j in np.flatnonzero(adjacent[v]).tolist():
            if j in bit:
                mask |= flag(bit[j])
        if words == 1:
            ok = np.flatnonzero((states[:, 0] & mask[0]) == 0)
        else:
            ok = np.flatnonzero(~(states & mask).any(axis=1))
        parent = np.concatenate([np.arange(len(states)), ok]).astype(np.int32)
        took = np.concatenate([np.zeros(len(states), dtype=bool), np.ones(len(ok), dtype=bool)])
        states = np.concatenate([states, states[ok] | flag(b)])
        value = np.concatenate([value, value[ok] + w[v]])
        gone = np.zeros(words, dtype=np.uint64)
        for i in leaving[k]:
            gone |= flag(bit[i])
            free.append(bit.pop(i))
        if gone.any() and not (more is not None and k == n - 1):
            # the states that now coincide keep the heaviest (sorted by state, the largest
            # value of each run of equal states; 5 times faster than sorting by both)
            states = states & ~gone
            if words == 1:
                by = np.argsort(states[:, 0])
                ordered = states[by]
                first = np.ones(len(by), dtype=bool)
                first[1:] = ordered[1:, 0] != ordered[:-1, 0]
            else:
                by = np.lexsort(states.T[::-1])
                ordered = states[by]
                first = np.ones(len(by), dtype=bool)
                first[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
            run = np.cumsum(first) - 1
            by_value = value[by]
            hit = np.flatnonzero(by_value == np.maximum.reduceat(by_value,
                                                                 np.flatnonzero(first))[run])
            once = np.ones(len(hit), dtype=bool)
            once[1:] = run[hit][1:] != run[hit][:-1]
            keep = by[hit[once]]
            states, value, parent, took = states[keep], value[keep], parent[keep], took[keep]
        kept += len(states)
        if len(states) > limit or kept > 50 * limit or kept > budget:
            return None
        steps.append((parent, took))
    if stats is not None:
        stats["states"] = kept

    def rebuild(at: int) -> List[int]:
        chosen: List[int] = []
        for k in range(n - 1, -1, -1):
            parent, took = steps[k]
            if took[at]:
                chosen.append(int(order[k]))
            at = int(parent[at])
        return sorted(chosen)

    heaviest = np.argsort(-value, kind="stable")
    if more is not None:
        for at in heaviest[1:count + 1].tolist():
            more.append((float(value[at]), rebuild(at)))
    return float(value[heaviest[0]]), rebuild(int(heaviest[0]))


def _max_weight_independent_set(p: _Problem, weights: np.ndarray,
                                more: Optional[List[Tuple[float, Tuple[int, ...]]]] = None
                                ) -> Tuple[float, float, Tuple[int, ...]]:
    """An exact maximum-weight independent set of the conflict graph among the links of
    positive weight: by dynamic programming along an order of them where the conflict graph
    is narrow (:func:`_frontier_mwis`), else a MILP (HiGHS: at most one link of each clique
    of a cover of the edges among them): (an upper bound on the largest weight, the set's
    weight, the set). ``more`` gets up to :data:`FRONTIER_SETS` more independent sets,
    (weight, set), where the dynamic programming prices."""
    cand = _priced(weights)
    if len(cand) == 0:
        return 0.0, 0.0, ()
    order = p.frontier_order
    if order is not None:
        # the problem's order restricted to the priced links, renumbered among them
        where = np.full(p.n_links, -1)
        where[cand] = np.arange(len(cand))
        sub = where[order]
        others: Optional[List[Tuple[float, List[int]]]] = [] if more is not None else None
        exact = _frontier_mwis(p.adjacent[np.ix_(cand, cand)], weights[cand], FRONTIER_STATES,
                               sub[sub >= 0], more=others, count=FRONTIER_SETS)
        if exact is not None:
            if more is not None and others:
                more.extend((wt, tuple(sorted(int(cand[i]) for i in local)))
                            for wt, local in others)
            value, picked_local = exact
            picked_set = tuple(sorted(int(cand[i]) for i in picked_local))
            return max(value, float(weights[list(picked_set)].sum())), value, picked_set
    return _mwis_milp(p, cand, weights).result()


class _MwisMilp:
    """The exact pricing's MILP over the priced links ``cand`` (:func:`_mwis_milp`):
    :meth:`run` solves it (it touches nothing else, so two can run at once in threads),
    :meth:`result` reads it back as :func:`_max_weight_independent_set` returns."""

    def __init__(self, cand: np.ndarray, w: np.ndarray, cons: List[Any]) -> None:
        self.cand, self.w, self.cons = cand, w, cons
        self.res: Any = None

    def run(self) -> None:
        if self.res is None:
            self.res = milp(-self.w, constraints=self.cons, integrality=np.ones(len(self.cand)),
                            bounds=Bounds(0, 1), options={"mip_rel_gap": 1e-9})

    def result(self) -> Tuple[float, float, Tuple[int, ...]]:
        self.run()
        res, w, cand = self.res, self.w, self.cand
        if res.status != 0:
            raise XlayerError(f"oracle: the independent-set pricing failed: {res.message}")
        picked = np.flatnonzero(res.x > 0.5)
        value = float(w[picked].sum())
        dual = getattr(res, "mip_dual_bound", None)
        upper = max(value, -float(dual)) if dual is not None and math.isfinite(dual) else value
        return upper, value, tuple(sorted(int(cand[i]) for i in picked))


def _quiet(fn: Callable[[], None]) -> None:
    """``fn()`` in a helper thread, its exception dropped: :meth:`_MwisMilp.result` solves
    again in the calling thread, where it raises."""
    try:
        fn()
    except Exception:  # noqa: BLE001 - raised again by result()
        pass


def _priced(weights: np.ndarray) -> np.ndarray:
    """The links the exact pricing at link prices ``weights`` runs over: those priced above
    the solver's noise."""
    return np.flatnonzero(weights > 1e-12 * max(1.0, float(weights.max(initial=0.0))))


def _mwis_milp(p: _Problem, cand: np.ndarray, weights: np.ndarray) -> _MwisMilp:
    """The exact pricing by MILP over the priced links ``cand`` (not yet solved): at most one
    link of each clique of the cover (:class:`_Cliques`, grown here as it needs)."""
    a = p.cliques.among(cand, weights)
    cons = [LinearConstraint(a, -np.inf, 1.0)] if a.shape[0] else []
    return _MwisMilp(cand, weights[cand], cons)


def _greedy_sets(p: "_Problem", mu: np.ndarray, sigma: float, tries: int = GREEDY_TRIES
                 ) -> List[Tuple[int, ...]]:
    """Maximal independent sets grown greedily by price from each of the ``tries`` dearest
    links, those whose price exceeds the price of time: cheap columns, found before the exact
    pricing is needed."""
    order = np.argsort(-mu, kind="stable")
    priced = order[mu[order] > 1e-12]
    out: Dict[Tuple[int, ...], None] = {}
    for first in priced[:tries]:
        s = _maximal(p, [int(first)], order)
        if s not in out and float(mu[list(s)].sum()) > sigma * (1.0 + TOLERANCE) + 1e-12:
            out[s] = None
    return list(out)


def _maximal(p: _Problem, chosen: Sequence[int], order: Union[Sequence[int], np.ndarray]
             ) -> Tuple[int, ...]:
    """``chosen`` (an independent set) extended by the links of ``order`` that conflict with
    nothing chosen so far, in that order: a maximal independent set containing it. The links
    still free are kept in order and filtered by each one taken (half of dpclo-fig9's links
    conflict with a given one, so the list shrinks fast), not visited one by one in Python."""
    adj = p.adjacent
    blocked = np.zeros(p.n_links, dtype=bool)
    out = [int(k) for k in chosen]
    for k in out:
        blocked |= adj[k]
        blocked[k] = True
    links = np.asarray(order, dtype=int)
    free = links[~blocked[links]]
    while len(free):
        k = int(free[0])
        out.append(k)
        free = free[1:]
        free = free[~adj[k, free] & (free != k)]
    return tuple(sorted(out))


def _covering_sets(p: _Problem) -> List[Tuple[int, ...]]:
    """Maximal independent sets that together hold every link: each link not yet in one starts
    the next set, which takes the links not yet covered first."""
    covered = np.zeros(p.n_links, dtype=bool)
    out: List[Tuple[int, ...]] = []
    for k in range(p.n_links):
        if covered[k]:
            continue
        order = np.concatenate([np.flatnonzero(~covered), np.flatnonzero(covered)])
        s = _maximal(p, [k], order)
        covered[list(s)] = True
        out.append(s)
    return out


def _lagrangian_bound(objective: str, d: np.ndarray, weight: float) -> float:
    """An upper bound on the master's objective over every independent set and path, from
    any link prices mu >= 0: ``weight`` bounds the heaviest independent set's price W(mu)
    and ``d[f]`` is flow f's cheapest path (airtime x price). Every feasible point has
    ``sum_f y_f d_f <= sum_l mu_l (airtime used on l) <= sum_S lambda_S mu(S) <= W``, so
    the aggregate is at most W / min d, the smallest rate at most W / sum d, and the sum of
    ln y at most its maximum under that one constraint, sum_f ln(W / (N d_f))."""
    if not np.all(np.isfinite(d)) or not weight >= 0:
        return math.inf
    if objective == "maxmin":  # t * sum d <= sum y_f d_f <= W
        return float(weight / d.sum()) if d.sum() > 0 else math.inf
    if not np.all(d > 0) or not weight > 0:
        return math.inf
    if objective == "aggregate":
        return float(weight / d.min())
    return float(np.sum(np.log(weight / (len(d) * d))))


def _cheapest(p: _Problem, mu: np.ndarray) -> np.ndarray:
    """Each flow's cheapest route at link prices ``mu``: the airtime-weighted price of its
    static route, or under multi-path routing of its cheapest path (Dijkstra)."""
    d = np.empty(len(p.flows))
    for fi, f in enumerate(p.flows):
        with np.errstate(invalid="ignore"):
            w = np.where(np.isfinite(p.air[fi]), p.air[fi] * mu, np.inf)
        if p.routing == "static":
            d[fi] = float(sum(w[p.local[k]] for k in f["route"]))
        else:
            d[fi] = p.shortest_path(fi, w)[1]
    return d


def _gap(objective: str, upper: float, value: float, nf: int) -> float:
    """How far ``value`` may be below the optimum it is known to be within ``upper`` of:
    relative for the aggregate and the smallest rate; for the proportional-fair utility per
    flow (the factor, minus one, by which every rate's geometric mean could still rise)."""
    if not math.isfinite(upper):
        return math.inf
    if objective == "proportional":
        return max(0.0, (upper - value) / nf)
    return max(0.0, (upper - value) / upper) if upper > 0 else 0.0


def _certify(p: _Problem, master: _Master, y: np.ndarray, cols: List[Tuple[int, ...]],
             known: set, deadline: float, tolerance: float = GAP_TOLERANCE) -> float:
    """An upper bound on the proportional-fair optimum from a feasible point ``y`` (the
    certificate of its first-order optimality): any feasible rates have sum_f x_f / y_f <= V,
    the largest such weighted aggregate, so their utility is at most sum ln y + N ln(V / N)
    (the log utility's maximum under that one constraint), equal to y's when y is the optimum
    (V = N). V is bounded by a linear column generation (the aggregate's, weighted by 1/y_f),
    whose Lagrangian bounds converge in a few iterations where the proportional-fair master's
    degenerate duals make the bound creep (dpclo-fig6: its value optimal after 13
    iterations, the bound at 0.2 per flow after 40); its prices give the bound directly
    (:func:`_lagrangian_bound` at them). The sets it generates join ``cols`` (and its paths
    ``master``'s), so the next proportional-fair master has them. Returns the best bound."""
    lp = _Master(p, "aggregate", form=master.form)
    lp.weights = 1.0 / np.maximum(y, 1e-300)
    if master.allowed is not None:  # the same generated links, shared
        lp.paths, lp._known_paths = master.paths, master._known_paths
        lp.allowed = master.allowed
    upper = math.inf
    nf = len(p.flows)
    center: Optional[np.ndarray] = None  # the prices of the best weighted bound (Wentges)
    center_bound = math.inf

    def price(at: np.ndarray) -> Tuple[float, float, Tuple[int, ...], float]:
        """The heaviest set at prices ``at``, its weight, the set, the weighted bound there;
        the proportional-fair bound there lowers ``upper``."""
        nonlocal upper
        d = _cheapest(p, at)
        heaviest, weight, best = _max_weight_independent_set(p, at)
        upper = min(upper, _lagrangian_bound("proportional", d, heaviest))
        ratio = float(np.min(d / lp.weights)) if np.all(np.isfinite(d)) else 0.0
        return heaviest, weight, best, (heaviest / ratio if ratio > 0 else math.inf)

    added = 0
    for _ in range(MAX_ITERATIONS):
        _, mu, sigma, value = lp.solve(cols)
        if lp.allowed is not None:
            new_paths = lp.improving_paths(mu)[1]
            if new_paths and time.perf_counter() < deadline:
                continue
        candidate = None
        if center is not None:
            at = SMOOTHING * center + (1.0 - SMOOTHING) * mu
            _, _, best, bound = price(at)
            if bound < center_bound:
                center, center_bound = at, bound
            if float(mu[list(best)].sum()) > sigma * (1.0 + TOLERANCE) + 1e-12:
                candidate = best
        if candidate is None and _gap("aggregate", center_bound, value, nf) > tolerance:
            _, weight, best, bound = price(mu)
            if bound < center_bound:
                center, center_bound = mu.copy(), bound
            if weight > sigma * (1.0 + TOLERANCE) + 1e-12:
                candidate = best
        if _TRACE:
            print(f"  certify value {value:.8g} of {nf} lp gap "
                  f"{_gap('aggregate', center_bound, value, nf):.2e} cols {len(cols)}",
                  flush=True)
        if _gap("aggregate", center_bound, value, nf) <= tolerance or candidate is None:
            break
        if time.perf_counter() >= deadline or added >= CERTIFY_ROUNDS:
            break
        found = [_maximal(p, candidate, np.argsort(-mu, kind="stable"))]
        found += _greedy_sets(p, mu, sigma)
        found = [c for c in dict.fromkeys(found) if c not in known]
        if not found:
            break
        known.update(found)
        cols.extend(found)
        added += 1
    return upper


def _check_limits(gap: Any, time_limit: Any) -> None:
    """A ``gap`` and a ``time_limit`` (seconds) are numbers, 0 or more, or None (the default);
    infinity is no limit. Anything else is a :class:`ScenarioError` naming the argument."""
    for name, value in (("gap", gap), ("time_limit", time_limit)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                             np.floating)):
            raise ScenarioError(f"{name}: must be a number, found {value!r}")
        if not value >= 0:  # also NaN
            raise ScenarioError(f"{name}: must be 0 or more, found {float(value)!r}")


def solve(m: Mapping[str, Any], objective: str = "proportional", routing: str = "static",
          columns: Optional[Sequence[Sequence[int]]] = None, backoff: str = "none",
          start: Optional[Sequence[Sequence[int]]] = None, gap: Optional[float] = None,
          time_limit: Optional[float] = None,
          progress: Optional[SolveCallback] = None) -> OracleResult:
    """The optimum of a model (the dict :func:`model` returns, or one of the same shape).

    ``columns``: a fixed list of independent sets (global link indices) to optimise over,
    without generating more (a test's brute-force enumeration); by default they are generated,
    starting from maximal sets covering every link plus ``start`` (e.g. the ``columns`` of an
    earlier :class:`OracleResult` of the same model: a warm start). ``backoff``: see
    :data:`BACKOFFS`. The generation ends when no independent set improves the master problem
    or when the Lagrangian bound is within ``gap`` (default :data:`GAP_TOLERANCE`) of its
    value, or, with ``time_limit`` (seconds), at the first exact pricing after that long; the
    summary's ``bound`` (an upper bound on the objective, valid however the generation
    ended), ``gap`` and ``stopped`` (optimal, time limit, interrupted, iterations, master
    failed) say how close the returned optimum is. ``progress``: called with a
    :class:`SolveProgress` after each iteration (``xlayer oracle`` draws it as a status line on
    a terminal); when it returns True the solve stops as at a time limit, ``stopped``
    "interrupted" (:data:`SolveCallback`).
    """
    if objective not in OBJECTIVES:
        raise ScenarioError(f"objective: {objective!r} is not one of {', '.join(OBJECTIVES)}")
    if routing not in ROUTINGS:
        raise ScenarioError(f"routing: {routing!r} is not one of {', '.join(ROUTINGS)}")
    if backoff not in BACKOFFS:
        raise ScenarioError(f"backoff: {backoff!r} is not one of {', '.join(BACKOFFS)}")
    _check_limits(gap, time_limit)
    if not m["flows"]:
        raise ScenarioError("flows: the scenario has no flows, so there is nothing to optimise")
    if objective == "proportional":
        require_solver()
    tolerance = GAP_TOLERANCE if gap is None else float(gap)
    t0 = time.perf_counter()
    for k in _CLOCK:
        _CLOCK[k] = 0.0
    p = _Problem(m, routing, backoff)
    nf = len(p.flows)

    def local(sets: Sequence[Sequence[int]]) -> List[Tuple[int, ...]]:
        cols = [tuple(sorted(p.local[k] for k in c if k in p.local)) for c in sets]
        return [c for c in dict.fromkeys(cols) if c]

    if columns is not None:
        cols = local(columns)
        generate = False
    else:
        covering = _covering_sets(p)
        cols = list(dict.fromkeys(local(start or ()) + covering))
        generate = True
    known = set(cols)
    # the sets covering every link stay: a link no column of the master holds forces its
    # rates to 0, which leaves the conic master without an interior (Clarabel stopped with
    # "insufficient progress" on dpclo-fig9 once pruning had uncovered 617 links)
    kept = set(covering) if columns is None else set()
    generated: Dict[Tuple[int, ...], None] = {}
    idle_since: Dict[Tuple[int, ...], int] = {}
    master = _Master(p, objective)
    iterations = 0
    last = -math.inf
    upper = math.inf
    stopped = "optimal"
    previous: Optional[Tuple[np.ndarray, np.ndarray, float, float]] = None
    center: Optional[np.ndarray] = None  # the link prices of the best bound so far
    center_bound = math.inf
    certifying = master.form in CERTIFY_FORMS
    best_y: np.ndarray = np.zeros(nf)
    best_value = -math.inf
    plain_next = False
    stab_used = False  # any master stabilised yet: then the best feasible rates so far stand

    def paths() -> int:
        """The master's paths: those generated, or one per flow over static routes."""
        return len(master.paths) if master.allowed is not None else nf

    halted = False  # the caller's progress asked the solve to stop

    def report() -> None:
        nonlocal halted
        if progress is not None and progress(
                SolveProgress(objective, iterations, time.perf_counter() - t0, len(cols),
                              paths(), _gap(objective, upper, value, nf))) is True:
            halted = True

    while True:
        iterations += 1
        stabilised = (PROX > 0 and objective == "proportional" and generate
                      and PRICE_EVERY_ITERATION and p.frontier_order is not None
                      and center is not None and not plain_next and not certifying)
        plain_next = False
        solved: Any = None
        if stabilised and iterations % PROX_VALUE_EVERY == 0:
            # the master without stabilisation, on the same columns: its optimum is feasible,
            # the value to bound; the stabilised one beside it gives the prices to price at
            # (both at once, :data:`PARALLEL`)
            t_pair = time.perf_counter()
            master.center = None
            plain = master.prepare(cols)
            master.center, master.prox = center, PROX
            plain_out, solved = _solve_conic([plain, master.prepare(cols)])
            _CLOCK["master"] += time.perf_counter() - t_pair
            if not isinstance(plain_out, XlayerError):
                y_plain, _, _, v_plain = plain_out
                if v_plain >= best_value:
                    best_y, best_value = y_plain, v_plain
        master.center, master.prox = (center, PROX) if stabilised else (None, 0.0)
        try:
            if solved is None:
                y, mu, sigma, value = _clocked("master", master.solve, cols)
            elif isinstance(solved, XlayerError):
                raise solved
            else:
                y, mu, sigma, value = solved
        except XlayerError:
            if stabilised:  # the next master, unstabilised, instead
                plain_next = True
                continue
            if previous is None:
                raise
            # Clarabel gave up on a larger master (more-testbed's proportional fairness did):
            # the previous master's optimum stands, with the bound of its prices
            stopped = "master failed"
            y, mu, sigma, value = previous
            heaviest = _max_weight_independent_set(p, mu)[0]
            upper = min(upper, _lagrangian_bound(objective, _cheapest(p, mu), heaviest))
            break
        stab_used = stab_used or stabilised
        if value >= best_value or not stab_used:
            best_y, best_value = y, value
        else:  # a stabilised master's rates, scaled to be feasible, did no better
            value = best_value
        previous = (best_y, mu, sigma, value)
        if generate and PRUNE_AFTER and objective == "proportional":
            # columns idle (no time share) for PRUNE_AFTER masters leave the master; one the
            # pricing finds again comes back (``known`` holds the master's columns only)
            for c, share in zip(cols, master.shares):
                generated.setdefault(c, None)
                if share > PRUNE_SHARE or c not in idle_since:
                    idle_since[c] = iterations
            keep = [c for c in cols
                    if c in kept or iterations - idle_since[c] < PRUNE_AFTER]
            if len(keep) < len(cols):
                cols[:] = keep
                known = set(keep)
        out_of_time = halted or (time_limit is not None
                                 and time.perf_counter() - t0 > time_limit)
        # multi-path routing: the paths cheaper than their flow is worth join the master
        # first (cheap: Dijkstra per flow); their prices are the d of the Lagrangian bound
        d: Optional[np.ndarray] = None
        new_paths = 0
        if routing == "multipath":
            d, new_paths = master.improving_paths(mu)
            if out_of_time:
                new_paths = 0
        if iterations >= MAX_ITERATIONS or not generate:
            if new_paths and iterations < MAX_ITERATIONS:
                continue
            if generate:
                heaviest = _max_weight_independent_set(p, mu)[0]
                stopped = "iterations"
            else:
                heaviest = max((float(mu[list(c)].sum()) for c in cols), default=0.0)
            upper = min(upper, _lagrangian_bound(
                objective, _cheapest(p, mu) if d is None else d, heaviest))
            break
        # cheap greedy columns first; the exact pricing when they find none or when the master's
        # value stalls (degenerate duals: greedy columns priced above sigma that improve
        # nothing, dpclo-fig9 under multi-path routing); only the exact pricing can tell that
        # no independent set improves, and with each flow's cheapest path at the same prices
        # it gives the Lagrangian bound that ends the generation once within ``gap`` (or once
        # out of time)
        stalled = value <= last + TOLERANCE * max(1.0, abs(value))
        last = value
        found = [] if out_of_time else [c for c in _clocked("greedy", _greedy_sets, p, mu, sigma)
                                        if c not in known]
        if GREEDY_KEEP_MAXMIN and objective == "maxmin" and len(found) > GREEDY_KEEP_MAXMIN:
            priced_w = np.asarray([float(mu[list(c)].sum()) for c in found])
            dearest = np.argsort(-priced_w, kind="stable")[:GREEDY_KEEP_MAXMIN]
            found = [found[i] for i in np.sort(dearest)]
        if (found or new_paths) and not stalled and not (
                PRICE_EVERY_ITERATION and p.frontier_order is not None):
            if _TRACE:
                print(f"it {iterations} t {time.perf_counter() - t0:.1f} value {value:.8g} "
                      f"cols {len(cols)} greedy {len(found)} paths {len(master.paths)} "
                      f"new {new_paths} {_clock_text()}", flush=True)
            report()
            for c in found:
                known.add(c)
                cols.append(c)
            continue
        # the exact pricing, stabilised (Wentges smoothing): the link prices the master returns
        # jump between the many optimal duals of a degenerate master (dpclo-fig6's
        # proportional fairness had its optimal value after 13 iterations and a gap of 0.2 per
        # flow after 40), so the pricing first runs at a point between them and the prices of
        # the best bound so far (the centre); its set joins if it improves the master, and its
        # bound, valid at any prices, may move the centre. Only when it does not improve
        # (a mis-pricing) does the pricing run at the master's own prices, which alone can
        # tell that no set improves.
        candidate: Optional[Tuple[int, ...]] = None
        priced = False
        if objective == "proportional" and generate and stalled and certifying:
            # the master's value has stopped moving: bound it by its certificate, whose
            # columns join the master, for as long as each certificate at least halves the
            # gap. Not over generated links: there the certificate's weighted aggregate keeps
            # generating paths (dpclo-fig9: 1000 paths and 50 s for one certificate, its
            # bound 0.2 per flow away), where the stabilised Lagrangian bound below reaches
            # 0.01 in a minute.
            before = (len(cols), len(master.paths))
            deadline = (-math.inf if halted
                        else t0 + time_limit if time_limit is not None else math.inf)
            certified = _certify(p, master, best_y, cols, known, deadline, tolerance)
            if not _gap(objective, certified, value, nf) <= 0.5 * _gap(objective, upper, value,
                                                                       nf):
                certifying = False
            upper = min(upper, certified)
            if _gap(objective, upper, value, nf) <= tolerance:
                break
            if (len(cols), len(master.paths)) != before:
                for c in found:
                    if c not in known:
                        known.add(c)
                        cols.append(c)
                continue
        more: Optional[List[Tuple[float, Tuple[int, ...]]]] = (
            [] if FRONTIER_SETS and objective in FRONTIER_SETS_FOR else None)
        both = PRICE_BOTH and objective in PRICE_BOTH_FOR
        ahead: Optional[_MwisMilp] = None  # the MILP at the master's prices, solved already
        if center is not None and SMOOTHING > 0.0:
            mu_s = SMOOTHING * center + (1.0 - SMOOTHING) * mu
            cand_s, cand_m = _priced(mu_s), _priced(mu)
            if (PARALLEL and both and p.frontier_order is None and len(cand_s) and len(cand_m)
                    and _gap(objective, upper, value, nf) > tolerance):
                # both MILPs at once (:data:`PARALLEL`), their cliques grown in the order of
                # one after the other; the second is dropped when the first's bound closes the
                # gap, which ends the generation, so no later pricing sees its cliques
                t_pair = time.perf_counter()
                smoothed = _mwis_milp(p, cand_s, mu_s)
                ahead = _mwis_milp(p, cand_m, mu)
                helper = threading.Thread(target=_quiet, args=(ahead.run,), daemon=True)
                helper.start()
                _quiet(smoothed.run)
                helper.join()
                heaviest, weight, best = smoothed.result()
                _CLOCK["pricing"] += time.perf_counter() - t_pair
            else:
                heaviest, weight, best = _clocked("pricing", _max_weight_independent_set, p,
                                                  mu_s, more)
            bound_s = _lagrangian_bound(objective, _cheapest(p, mu_s), heaviest)
            if bound_s < center_bound:
                center, center_bound = mu_s, bound_s
            upper = min(upper, bound_s)
            if float(mu[list(best)].sum()) > sigma * (1.0 + TOLERANCE) + 1e-12:
                candidate, priced = best, True
        extra: Optional[Tuple[int, ...]] = None
        if (not priced or both) and _gap(objective, upper, value, nf) > tolerance:
            if ahead is not None:
                heaviest, weight, best = ahead.result()
            else:
                heaviest, weight, best = _clocked("pricing", _max_weight_independent_set, p, mu,
                                                  more)
            bound_m = _lagrangian_bound(objective, _cheapest(p, mu) if d is None else d,
                                        heaviest)
            if bound_m < center_bound:
                center, center_bound = mu.copy(), bound_m
            upper = min(upper, bound_m)
            if weight > sigma * (1.0 + TOLERANCE) + 1e-12:
                if candidate is None:
                    candidate = best
                else:
                    extra = best
        if _TRACE:
            print(f"it {iterations} t {time.perf_counter() - t0:.1f} value {value:.8g} "
                  f"upper {upper:.8g} gap {_gap(objective, upper, value, nf):.2e} "
                  f"cols {len(cols)} greedy {len(found)} paths {len(master.paths)} "
                  f"new {new_paths} smoothed {priced} {_clock_text()}", flush=True)
        report()
        if _gap(objective, upper, value, nf) <= tolerance:
            break
        if out_of_time or halted:  # halted by the report just above: the bound is this pricing's
            stopped = "interrupted" if halted else "time limit"
            break
        # the other heavy sets of the pricings, those that improve at the master's prices
        for heavy in [candidate, extra] + [c for _, c in more or ()
                                           if float(mu[list(c)].sum())
                                           > sigma * (1.0 + TOLERANCE) + 1e-12]:
            if heavy is not None:
                c = _maximal(p, heavy, np.argsort(-mu, kind="stable"))
                if c not in known and c not in found:
                    found.append(c)
        if not found and not new_paths:
            if not stabilised:
                break
            # nothing improves at the stabilised prices: the next master, unstabilised, says
            # whether anything improves at its own
            plain_next = True
        for c in found:
            known.add(c)
            cols.append(c)
    solve_s = time.perf_counter() - t0
    for c in cols:
        generated.setdefault(c, None)
    cols = list(generated)
    upper = max(upper, value)
    y = np.maximum(best_y, 0.0)
    rates = y * 1e6
    flows = pd.DataFrame({
        "flow": [f["flow"] for f in p.flows],
        "src": [f["src"] for f in p.flows],
        "dst": [f["dst"] for f in p.flows],
        "hops": [len(f["route"]) for f in p.flows],
        "rate_bps": rates,
    })
    links = pd.DataFrame({
        "from": m["links"]["from"], "to": m["links"]["to"],
        "rate_bps": m["links"]["rate_bps"], "success": m["links"]["success"],
        "capacity_pps": [c[0] if c else float("nan") for c in m["links"]["capacity_pps"]],
    })
    summary: Dict[str, Any] = {
        "objective": objective,
        "routing": routing,
        "backoff": backoff,
        "utility": log_utility(rates),
        "aggregate_bps": float(rates.sum()),
        "min_rate_bps": float(rates.min()),
        "bound": (upper + nf * math.log(1e6) if objective == "proportional" else upper * 1e6),
        "gap": _gap(objective, upper, value, nf),
        "links": p.n_links,
        "conflicts": len(p.conflicts),
        "columns": len(cols),
        "form": master.form,
        "paths": paths(),
        "iterations": iterations,
        "solve_s": solve_s,
        "solver_status": master.status,
        "stopped": stopped,
    }
    return OracleResult(flows=flows, summary=summary, links=links,
                        columns=[tuple(p.links[i] for i in c) for c in cols])


def measured_rates(m: Mapping[str, Any], measured: pd.DataFrame) -> Tuple[np.ndarray, str]:
    """Each model flow's measured rate as the bounds hold for it (module doc): its throughput
    when every flow has the same measured window, else its delivered bits over the span of all
    windows; and which of the two (``window`` or ``span``)."""
    got = measured.set_index("flow")["throughput_bps"]
    missing = [int(f["flow"]) for f in m["flows"] if f["flow"] not in got.index]
    if missing:
        raise XlayerError(f"flows.csv: flows {missing} of the scenario are missing")
    rates = np.asarray([float(got[f["flow"]]) for f in m["flows"]])
    windows = np.asarray([f.get("window_s", (0.0, 1.0)) for f in m["flows"]], dtype=float)
    if np.ptp(windows[:, 0]) <= 1e-9 and np.ptp(windows[:, 1]) <= 1e-9:
        return rates, "window"
    span = windows[:, 1].max() - windows[:, 0].min()
    lengths = windows[:, 1] - windows[:, 0]
    return rates * lengths / span if span > 0 else rates, "span"


def compare_run(result: OracleResult, measured: pd.DataFrame, optimal_utility: float,
                optimal_aggregate_bps: float, m: Optional[Mapping[str, Any]] = None,
                optimal_rates_bps: Optional[Sequence[float]] = None,
                utility_bound: Optional[float] = None,
                aggregate_bound_bps: Optional[float] = None) -> OracleResult:
    """Adds a run's measured rates (a flows table: ``flow``, ``throughput_bps``) to ``result``:
    per flow ``measured_bps`` and ``measured_over_optimal`` (against ``result``'s rates); in the
    summary the measured utility and aggregate, the bounds they are held against (the
    proportional-fair optimum's utility and the largest aggregate) and the fractions
    ``fraction_utility`` (against ``optimal_rates_bps``, the proportional-fair rates; by
    default ``result``'s) and ``fraction_aggregate`` (module doc). ``m``, the model, gives the
    flows' windows; without it they are taken as equal. Given the solves' upper bounds
    (``utility_bound``, ``aggregate_bound_bps``: the summaries' ``bound``), also
    ``fraction_utility_low`` and ``fraction_aggregate_low``, the fractions against them: what
    the fractions are at least when the solves stopped short of the optimum (``gap`` > 0)."""
    model_flows = m if m is not None else {"flows": [{"flow": f} for f in result.flows["flow"]]}
    rates, basis = measured_rates(model_flows, measured)
    got = measured.set_index("flow")["throughput_bps"]
    flows = result.flows.copy()
    flows["measured_bps"] = [float(got[f]) for f in flows["flow"]]
    with np.errstate(divide="ignore", invalid="ignore"):
        flows["measured_over_optimal"] = flows["measured_bps"] / flows["rate_bps"]
    optimal = (np.asarray(optimal_rates_bps, dtype=float) if optimal_rates_bps is not None
               else flows["rate_bps"].to_numpy(dtype=float))
    summary = dict(result.summary)
    summary["measured_basis"] = basis
    summary["measured_utility"] = log_utility(rates)
    summary["measured_aggregate_bps"] = float(rates.sum())
    summary["optimal_utility"] = optimal_utility
    summary["optimal_aggregate_bps"] = optimal_aggregate_bps
    summary["fraction_utility"] = fraction_utility(rates, optimal)
    summary["fraction_aggregate"] = (summary["measured_aggregate_bps"] / optimal_aggregate_bps
                                     if optimal_aggregate_bps else float("nan"))
    if utility_bound is not None and len(rates):
        summary["fraction_utility_low"] = math.exp(
            (log_utility(rates) - max(utility_bound, optimal_utility)) / len(rates))
    if aggregate_bound_bps is not None:
        top = max(aggregate_bound_bps, optimal_aggregate_bps)
        summary["fraction_aggregate_low"] = (summary["measured_aggregate_bps"] / top
                                             if top else float("nan"))
    return OracleResult(flows=flows, summary=summary, links=result.links, columns=result.columns)


def run_routing(scenario: Mapping[str, Any]) -> str:
    """The routing whose optimum bounds a run of ``scenario`` (module doc): ``static`` when it
    routes by the static table (``net.routing = "static"``, the default, and a stack that
    follows it), else ``multipath``."""
    from xlayer.scenario import normalize_scenario

    full = normalize_scenario(scenario)
    routing = str((full.get("net") or {}).get("routing", "static"))
    preset = str((full.get("stack") or {}).get("preset", ""))
    return "static" if routing == "static" and preset not in SELF_ROUTING_PRESETS else "multipath"


def _bounds(m: Mapping[str, Any], objective: str, routing: str, backoff: str,
            time_limit: Optional[float] = None, gap: Optional[float] = None,
            progress: Optional[SolveCallback] = None) -> Dict[str, OracleResult]:
    """The optima a comparison needs: ``objective``'s, the proportional-fair one and the
    largest aggregate, each solve warm-started with the columns of the ones before."""
    out: Dict[str, OracleResult] = {}
    start: List[Tuple[int, ...]] = []
    for obj in dict.fromkeys([objective, "proportional", "aggregate"]):
        out[obj] = solve(m, obj, routing, backoff=backoff, start=start, time_limit=time_limit,
                         gap=gap, progress=progress)
        start = out[obj].columns
    return out


def _compare(m: Mapping[str, Any], measured: pd.DataFrame, objective: str, routing: str,
             backoff: str, time_limit: Optional[float] = None, gap: Optional[float] = None,
             progress: Optional[SolveCallback] = None) -> OracleResult:
    """A run held against the optima of :func:`_bounds`. The summary's ``stopped`` is the
    first of the solves' that is not "optimal" (the fractions depend on all of them), else
    "optimal"; ``gap`` and ``bound`` stay ``objective``'s."""
    res = _bounds(m, objective, routing, backoff, time_limit, gap, progress)
    pf = res["proportional"]
    out = compare_run(res[objective], measured, pf.summary["utility"],
                      res["aggregate"].summary["aggregate_bps"], m=m,
                      optimal_rates_bps=pf.flows["rate_bps"].to_numpy(),
                      utility_bound=pf.summary["bound"],
                      aggregate_bound_bps=res["aggregate"].summary["bound"])
    short = [r.summary["stopped"] for r in res.values() if r.summary["stopped"] != "optimal"]
    out.summary["stopped"] = short[0] if short else "optimal"
    return out


def oracle(source: Union[str, "os.PathLike[str]", Mapping[str, Any], None] = None,
           objective: str = "proportional", routing: Optional[str] = None,
           overrides: Iterable[str] = (), seed: Optional[int] = None, backoff: str = "none",
           time_limit: Optional[float] = None, gap: Optional[float] = None,
           progress: Optional[SolveCallback] = None) -> Union[OracleResult, "OracleSweep"]:
    """The optimum of a scenario (TOML path, dict, None for the default); given a run's result
    folder (``scenario.toml`` + ``flows.csv``), the optimum of the scenario it ran with the
    run's measured rates beside it and its fractions of the optimal utility and aggregate
    (:func:`compare_run`); given a sweep folder, the same for every finished run
    (:func:`sweep_oracle`). ``objective``: proportional (sum of log rates), aggregate or maxmin;
    ``routing``: static (the scenario's routes) or multipath (free multi-commodity flow);
    default static for a scenario, :func:`run_routing` for a run. ``backoff``: see
    :data:`BACKOFFS`. ``time_limit``, ``gap`` and ``progress``: each solve's (:func:`solve`;
    not for a sweep folder).

    >>> o = xlayer.oracle("scenarios/chain.toml")
    >>> o.flows[["flow", "rate_bps"]]; o.summary["utility"], o.summary["aggregate_bps"]
    """
    _check_limits(gap, time_limit)  # before the model is built (seconds for 108 nodes)
    folder = Path(source) if isinstance(source, (str, os.PathLike)) else None
    if folder is not None and folder.is_dir():
        if (folder / "sweep.json").is_file():
            return sweep_oracle(folder, routing=routing, backoff=backoff)
        from xlayer.results import read_csv_table
        from xlayer.scenario import load_scenario, load_toml_file

        scen = folder / "scenario.toml"
        if not scen.is_file():
            raise XlayerError(f"{folder}: not a result folder (no scenario.toml)")
        full = load_scenario(load_toml_file(scen), overrides, seed)
        m = _core.oracle_model(json.dumps(full, allow_nan=False))
        measured = read_csv_table(folder / "flows.csv", ("flow", "throughput_bps"))
        return _compare(m, measured, objective, routing or run_routing(full), backoff,
                        time_limit, gap, progress)
    return solve(model(source, overrides, seed), objective, routing or "static", backoff=backoff,
                 time_limit=time_limit, gap=gap, progress=progress)


# ----------------------------------------------------------------------------------------------
# Sweeps


@dataclass
class OracleSweep:
    """The oracle column of a sweep: ``runs`` (one row per finished run: run, stack, seed, the
    swept paths, routing, optimal_utility, optimal_aggregate_bps, measured_utility,
    measured_aggregate_bps, fraction_utility, fraction_aggregate; NaN with ``error`` set where
    the oracle could not judge the run) and ``flows`` (one row per flow of those runs: run,
    stack, seed, the swept paths, flow, hops, throughput_bps, optimal_bps,
    measured_over_optimal)."""

    runs: pd.DataFrame
    flows: pd.DataFrame
    folder: Optional[Path] = None


def _hash(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _read_cache(path: Path) -> Dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
        return {}
    entries = data.get("runs")
    return entries if isinstance(entries, dict) else {}


def _write_cache(path: Path, entries: Mapping[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.partial")
    try:
        tmp.write_text(json.dumps({"format": CACHE_FORMAT, "runs": entries}, sort_keys=True,
                                  allow_nan=True))
        os.replace(tmp, path)
    except OSError:  # a read-only sweep folder: the answer is still returned
        try:
            tmp.unlink()
        except OSError:
            pass


def _judge_run(run_dir: Path, routing: Optional[str], backoff: str,
               solved: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """What the oracle says of one run folder: bounds, fractions, each flow's optimal rate.
    ``solved`` maps a model's hash to its bounds, so runs of one network share a solve."""
    from xlayer.results import read_csv_table
    from xlayer.scenario import load_scenario, load_toml_file

    full = load_scenario(load_toml_file(run_dir / "scenario.toml"))
    m = _core.oracle_model(json.dumps(full, allow_nan=False))
    chosen = routing or run_routing(full)
    key = _hash({"model": m, "routing": chosen, "backoff": backoff})
    if key not in solved:
        res = _bounds(m, "proportional", chosen, backoff)
        solved[key] = {"utility": res["proportional"].summary["utility"],
                       "aggregate_bps": res["aggregate"].summary["aggregate_bps"],
                       "rates_bps": res["proportional"].flows["rate_bps"].tolist()}
    b = solved[key]
    measured = read_csv_table(run_dir / "flows.csv", ("flow", "throughput_bps"))
    rates, basis = measured_rates(m, measured)
    return {
        "routing": chosen,
        "optimal_utility": b["utility"],
        "optimal_aggregate_bps": b["aggregate_bps"],
        "measured_utility": log_utility(rates),
        "measured_aggregate_bps": float(rates.sum()),
        "measured_basis": basis,
        "fraction_utility": fraction_utility(rates, b["rates_bps"]),
        "fraction_aggregate": (float(rates.sum()) / b["aggregate_bps"]
                               if b["aggregate_bps"] else float("nan")),
        "flows": [int(f["flow"]) for f in m["flows"]],
        "optimal_bps": list(b["rates_bps"]),
    }


def sweep_oracle(folder: PathLike, routing: Optional[str] = None, backoff: str = "none",
                 progress: Optional[Callable[[int, int], None]] = None,
                 cache: bool = True) -> OracleSweep:
    """The oracle column of a sweep folder (:class:`OracleSweep`): every finished run against
    the optimum of the scenario it ran (its own model: seeds and stacks may change the network
    and the packets; runs of one network share a solve). ``routing`` None: each run's
    :func:`run_routing`. The answers are cached in the folder's ``oracle.json`` by the hash of
    each run's scenario, so a second call (``xlayer plot`` after ``xlayer compare``) solves
    nothing. A run the oracle cannot judge (wired links, no route) gets NaN and its ``error``;
    a missing solver is an :class:`XlayerError` (:func:`require_solver`). ``progress(done,
    total)`` is called after each run."""
    from xlayer.analysis import load

    require_solver()
    if routing is not None and routing not in ROUTINGS:
        raise ScenarioError(f"routing: {routing!r} is not one of {', '.join(ROUTINGS)}")
    if backoff not in BACKOFFS:
        raise ScenarioError(f"backoff: {backoff!r} is not one of {', '.join(BACKOFFS)}")
    folder = Path(folder)
    sweep = load(folder)
    ok = sweep.ok
    keys = ["run", "stack", "seed"] + list(sweep.swept)
    cache_path = folder / CACHE_FILE
    entries = _read_cache(cache_path) if cache else {}
    fresh: Dict[str, Any] = {}
    solved: Dict[str, Dict[str, Any]] = {}
    run_rows: List[Dict[str, Any]] = []
    flow_rows: List[Dict[str, Any]] = []
    measured_flows = sweep.flows.set_index(["run", "flow"]) if len(sweep.flows) else None
    for i, r in enumerate(ok.to_dict(orient="records")):
        run_dir = folder / "runs" / str(r["run"])
        try:
            text = (run_dir / "scenario.toml").read_text()
        except OSError as e:
            text = None
            judged: Dict[str, Any] = {"error": f"{run_dir}: {e.strerror or e}"}
        if text is not None:
            ckey = _hash({"scenario": text, "routing": routing, "backoff": backoff})
            if ckey in entries:
                judged = entries[ckey]
            else:
                try:
                    judged = _judge_run(run_dir, routing, backoff, solved)
                except XlayerError as e:
                    judged = {"error": str(e).splitlines()[0]}
            fresh[ckey] = judged
        base = {k: r[k] for k in keys if k in r}
        run_rows.append(dict(base, **{k: judged.get(k, np.nan) for k in (
            "routing", "optimal_utility", "optimal_aggregate_bps", "measured_utility",
            "measured_aggregate_bps", "fraction_utility", "fraction_aggregate")},
            error=judged.get("error", "")))
        for flow, opt in zip(judged.get("flows", []), judged.get("optimal_bps", [])):
            got = np.nan
            hops = np.nan
            if measured_flows is not None and (r["run"], flow) in measured_flows.index:
                one = measured_flows.loc[(r["run"], flow)]
                got = float(one["throughput_bps"])
                hops = one["hops"] if "hops" in one else np.nan
            flow_rows.append(dict(base, flow=flow, hops=hops, throughput_bps=got,
                                  optimal_bps=opt,
                                  measured_over_optimal=got / opt if opt else np.nan))
        if progress is not None:
            progress(i + 1, len(ok))
    if cache and fresh != entries:
        _write_cache(cache_path, fresh)
    runs = pd.DataFrame(run_rows, columns=keys + [
        "routing", "optimal_utility", "optimal_aggregate_bps", "measured_utility",
        "measured_aggregate_bps", "fraction_utility", "fraction_aggregate", "error"])
    flows = pd.DataFrame(flow_rows, columns=keys + [
        "flow", "hops", "throughput_bps", "optimal_bps", "measured_over_optimal"])
    return OracleSweep(runs=runs, flows=flows, folder=folder)


def cached_sweep_oracle(folder: PathLike) -> Optional[OracleSweep]:
    """The oracle column of a sweep folder if ``oracle.json`` holds it for every finished run
    (as ``xlayer compare`` and ``xlayer sweep`` leave it), else None; solves nothing."""
    folder = Path(folder)
    entries = _read_cache(folder / CACHE_FILE)
    if not entries:
        return None
    try:
        require_solver()
    except XlayerError:
        return None
    from xlayer.analysis import load

    sweep = load(folder, rebuild=False)
    for r in sweep.ok["run"]:
        try:
            text = (folder / "runs" / str(r) / "scenario.toml").read_text()
        except OSError:
            return None
        if _hash({"scenario": text, "routing": None, "backoff": "none"}) not in entries:
            return None
    return sweep_oracle(folder)


def summarize_sweep(o: OracleSweep, keys: Sequence[str]) -> pd.DataFrame:
    """Per group of ``keys`` (e.g. stack and the swept paths, in the order the runs come):
    ``fraction_utility`` and ``fraction_aggregate`` as mean, ci_low, ci_high (95 %, over the
    group's runs; log-transformed intervals, never below 0: :func:`xlayer.analysis.mean_ci`),
    ``runs`` judged and the ``routing`` of the bounds."""
    from xlayer.analysis import mean_ci

    judged = o.runs[o.runs["fraction_aggregate"].notna()]
    rows: List[Dict[str, Any]] = []
    if judged.empty:
        return pd.DataFrame(columns=list(keys) + ["runs", "routing"])
    for key, df in judged.groupby(list(keys), sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        row: Dict[str, Any] = dict(zip(keys, key))
        for metric in ("fraction_utility", "fraction_aggregate"):
            ci = mean_ci(df[metric].tolist(), lower=0.0)
            row.update({metric: ci["mean"], f"{metric}_low": ci["ci_low"],
                        f"{metric}_high": ci["ci_high"]})
        row["runs"] = len(df)
        row["routing"] = "/".join(sorted(set(df["routing"].astype(str))))
        rows.append(row)
    return pd.DataFrame(rows)
