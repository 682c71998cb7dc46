"""The optimum oracle (issue 22): how far a run is from the optimum of its network utility problem.

The network comes from the core (``xlayer._core.oracle_model``, ``xlayer_core::oracle``, where
every physical model choice is documented): the directed links that can carry data with their
capacities in delivered packets per second, the conflict graph (two links conflict when they
cannot both succeed at once), and each flow's static route. This module solves

    maximise U(y)  over flow rates y >= 0 (Mbit/s), time shares lambda_S >= 0 of independent sets S
    subject to     sum_S lambda_S <= 1
                   for every link l:  sum_f a_fl * z_fl <= sum_{S containing l} lambda_S

where ``z_fl`` is flow f's rate over link l (``y_f`` on each link of its static route, or a free
multi-commodity flow with conservation at every node) and ``a_fl`` the airtime a Mbit of flow f
takes on link l. U is the sum of ln(rate in bit/s) (proportional fairness; a conic problem
solved by cvxpy with Clarabel), the aggregate, or the smallest rate (LPs, scipy's HiGHS).

The independent sets are generated, not enumerated (column generation): starting from the
single links, the master problem's link prices mu_l price every independent set; an exact
maximum-weight independent set (a MILP, HiGHS through ``scipy.optimize.milp``) is the pricing
step, and a set whose weight exceeds the price of time (the dual of ``sum lambda <= 1``) joins
the master. When none does, the master's optimum is the optimum over the convex hull of all
independent sets (within ``TOLERANCE``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd

from xlayer._extras import require

require("oracle", "the optimum oracle (xlayer oracle, xlayer.optimum)", ("scipy",))
from scipy import sparse  # noqa: E402
from scipy.optimize import Bounds, LinearConstraint, linprog, milp  # noqa: E402

from xlayer import _core  # noqa: E402
from xlayer.errors import MissingExtraError, ScenarioError, XlayerError  # noqa: E402

__all__ = ["OBJECTIVES", "ROUTINGS", "OracleResult", "model", "solve", "oracle", "compare_run"]

OBJECTIVES = ("proportional", "aggregate", "maxmin")
ROUTINGS = ("static", "multipath")

#: Column generation stops when no independent set's weight exceeds the price of time by more
#: than this relative amount; the optimum it returns is within it of the true one.
TOLERANCE = 1e-6
#: A run's fraction of optimal above 1 + this is "beating the optimum": the model is wrong.
FRACTION_TOLERANCE = 0.02
MAX_ITERATIONS = 10_000


def _require_cvxpy() -> Any:
    try:
        import cvxpy as cp  # noqa: F401
        import clarabel  # noqa: F401
    except ImportError:
        raise MissingExtraError(
            "the proportional-fair oracle needs cvxpy and clarabel: pip install 'xlayer[oracle]' "
            "(or use --objective aggregate|maxmin, which need only scipy)"
        ) from None
    return cp


def model(scenario: Any = None, overrides: Iterable[str] = (), seed: Optional[int] = None
          ) -> Dict[str, Any]:
    """The core's model of a scenario (TOML path, dict or None): links, conflicts, flows."""
    import json

    from xlayer.scenario import load_scenario

    raw = load_scenario(scenario, overrides, seed)
    return _core.oracle_model(json.dumps(raw, allow_nan=False))


@dataclass
class OracleResult:
    """The optimum: ``flows`` (flow, src, dst, hops, rate_bps, and after :func:`compare_run`
    measured_bps and measured_over_optimal) and ``summary`` (objective, routing, utility,
    aggregate_bps, min_rate_bps, columns, iterations, solve_s, and after a comparison
    fraction_utility and fraction_aggregate)."""

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
        return float(v)
    return v


def log_utility(rates_bps: Iterable[float]) -> float:
    """Sum of ln(rate in bit/s), a rate below 1 bit/s counting 0 — the run summary's
    ``log_utility`` (DiffQ §6.1)."""
    return float(sum(math.log(r) if r >= 1.0 else 0.0 for r in rates_bps))


class _Problem:
    """The master problem's data: which links matter, the flows' airtime coefficients."""

    def __init__(self, m: Mapping[str, Any], routing: str) -> None:
        links = m["links"]
        self.flows = list(m["flows"])
        self.routing = routing
        n_links = len(links["from"])
        cap = links["capacity_pps"]
        for i, f in enumerate(self.flows):
            if routing == "static" and not f["route"]:
                raise XlayerError(f"flows[{i}]: flow {f['flow']} has no route to its destination")
        if routing == "static":
            used = sorted({k for f in self.flows for k in f["route"]})
        else:
            used = list(range(n_links))
        self.links = used  # global link indices the master constrains
        self.local = {k: i for i, k in enumerate(used)}
        self.src = [links["from"][k] for k in used]
        self.dst = [links["to"][k] for k in used]
        self.nodes = int(m["nodes"])
        # airtime (s) one Mbit of flow f takes on link l: 1e6 / (payload bits * packets/s)
        self.air = np.full((len(self.flows), len(used)), np.inf)
        for fi, f in enumerate(self.flows):
            for li, k in enumerate(used):
                c = cap[k][f["size"]]
                if c > 0:
                    self.air[fi, li] = 1e6 / (f["payload_bits"] * c)
        # conflict adjacency among the used links
        conf = []
        for a, b in m["conflicts"]:
            if a in self.local and b in self.local:
                conf.append((self.local[a], self.local[b]))
        self.conflicts = conf

    @property
    def n_links(self) -> int:
        return len(self.links)


def _link_rows(p: _Problem) -> Tuple[List[List[Tuple[int, float]]], int]:
    """For each used link, the (variable, coefficient) terms of its flow load; and the number of
    flow variables. Static: variable f is y_f. Multipath: variables y_f then z_fl."""
    rows: List[List[Tuple[int, float]]] = [[] for _ in range(p.n_links)]
    nf = len(p.flows)
    if p.routing == "static":
        for fi, f in enumerate(p.flows):
            for k in f["route"]:
                li = p.local[k]
                rows[li].append((fi, p.air[fi, li]))
        return rows, nf
    for fi in range(nf):
        for li in range(p.n_links):
            if np.isfinite(p.air[fi, li]):
                rows[li].append((nf + fi * p.n_links + li, p.air[fi, li]))
    return rows, nf + nf * p.n_links


def _conservation(p: _Problem, nvars: int) -> Tuple[sparse.csr_matrix, np.ndarray]:
    """Multipath: out - in of flow f at node v = y_f at its source, -y_f at its destination."""
    nf = len(p.flows)
    r, c, v = [], [], []
    row = 0
    for fi, f in enumerate(p.flows):
        for node in range(p.nodes):
            terms = []
            for li in range(p.n_links):
                if not np.isfinite(p.air[fi, li]):
                    continue
                if p.src[li] == node:
                    terms.append((nf + fi * p.n_links + li, 1.0))
                if p.dst[li] == node:
                    terms.append((nf + fi * p.n_links + li, -1.0))
            if node == f["src"]:
                terms.append((fi, -1.0))
            elif node == f["dst"]:
                terms.append((fi, 1.0))
            if not terms:
                continue
            for var, coef in terms:
                r.append(row)
                c.append(var)
                v.append(coef)
            row += 1
    return sparse.csr_matrix((v, (r, c)), shape=(row, nvars)), np.zeros(row)


def _master(p: _Problem, columns: List[Tuple[int, ...]], objective: str
            ) -> Tuple[np.ndarray, np.ndarray, float, float]:
    """Solves the restricted master over ``columns``. Returns (flow rates in Mbit/s, link
    prices mu >= 0, price of time sigma, objective value)."""
    rows, nflowvars = _link_rows(p)
    nf = len(p.flows)
    nc = len(columns)
    # variables: [flow vars (nflowvars)] [lambda (nc)] [t (maxmin only)]
    extra = 1 if objective == "maxmin" else 0
    nvars = nflowvars + nc + extra
    r, c, v = [], [], []
    for li, terms in enumerate(rows):
        for var, coef in terms:
            r.append(li)
            c.append(var)
            v.append(coef)
    for ci, col in enumerate(columns):
        for li in col:
            r.append(li)
            c.append(nflowvars + ci)
            v.append(-1.0)
    link_a = sparse.csr_matrix((v, (r, c)), shape=(p.n_links, nvars))
    time_a = sparse.csr_matrix(
        (np.ones(nc), (np.zeros(nc, dtype=int), nflowvars + np.arange(nc))), shape=(1, nvars))
    eq_a, eq_b = (_conservation(p, nvars) if p.routing == "multipath"
                  else (sparse.csr_matrix((0, nvars)), np.zeros(0)))

    if objective == "proportional":
        cp = _require_cvxpy()
        x = cp.Variable(nvars)
        link_c = link_a @ x <= 0
        time_c = time_a @ x <= 1
        cons = [link_c, time_c, x >= 0]
        if eq_a.shape[0]:
            cons.append(eq_a @ x == eq_b)
        prob = cp.Problem(cp.Maximize(cp.sum(cp.log(x[:nf]))), cons)
        prob.solve(solver=cp.CLARABEL)
        if prob.status not in ("optimal", "optimal_inaccurate"):
            raise XlayerError(f"oracle: the proportional-fair master problem is {prob.status}")
        y = np.asarray(x.value[:nf])
        mu = np.maximum(np.asarray(link_c.dual_value).ravel(), 0.0)
        sigma = float(np.asarray(time_c.dual_value).ravel()[0])
        return y, mu, sigma, float(prob.value)

    cost = np.zeros(nvars)
    if objective == "aggregate":
        cost[:nf] = -1.0
    else:
        cost[-1] = -1.0
    a_ub = [link_a, time_a]
    b_ub = [np.zeros(p.n_links), np.ones(1)]
    if objective == "maxmin":
        t_rows = sparse.csr_matrix(
            (np.concatenate([-np.ones(nf), np.ones(nf)]),
             (np.concatenate([np.arange(nf), np.arange(nf)]),
              np.concatenate([np.arange(nf), np.full(nf, nvars - 1)]))), shape=(nf, nvars))
        a_ub.append(t_rows)
        b_ub.append(np.zeros(nf))
    res = linprog(cost, A_ub=sparse.vstack(a_ub).tocsr(), b_ub=np.concatenate(b_ub),
                  A_eq=eq_a if eq_a.shape[0] else None, b_eq=eq_b if eq_a.shape[0] else None,
                  bounds=(0, None), method="highs")
    if res.status != 0:
        raise XlayerError(f"oracle: the {objective} master problem failed: {res.message}")
    y = res.x[:nf]
    mu = np.maximum(-res.ineqlin.marginals[:p.n_links], 0.0)
    sigma = float(-res.ineqlin.marginals[p.n_links])
    return y, mu, sigma, float(-res.fun)


def _max_weight_independent_set(weights: np.ndarray, conflicts: Sequence[Tuple[int, int]]
                                ) -> Tuple[float, Tuple[int, ...]]:
    """An exact maximum-weight independent set of the conflict graph (a MILP, HiGHS)."""
    n = len(weights)
    cand = np.flatnonzero(weights > 1e-12)
    if len(cand) == 0:
        return 0.0, ()
    pos = {int(k): i for i, k in enumerate(cand)}
    edges = [(pos[a], pos[b]) for a, b in conflicts if a in pos and b in pos]
    w = weights[cand]
    cons = []
    if edges:
        e = np.asarray(edges)
        m = len(edges)
        a = sparse.csr_matrix((np.ones(2 * m), (np.repeat(np.arange(m), 2), e.ravel())),
                              shape=(m, len(cand)))
        cons.append(LinearConstraint(a, -np.inf, 1.0))
    res = milp(-w, constraints=cons, integrality=np.ones(len(cand)), bounds=Bounds(0, 1),
               options={"mip_rel_gap": 1e-9})
    if res.status != 0:
        raise XlayerError(f"oracle: the independent-set pricing failed: {res.message}")
    chosen = tuple(sorted(int(cand[i]) for i in np.flatnonzero(res.x > 0.5)))
    assert n >= len(chosen)
    return float(w[np.flatnonzero(res.x > 0.5)].sum()), chosen


def solve(m: Mapping[str, Any], objective: str = "proportional", routing: str = "static",
          columns: Optional[Sequence[Sequence[int]]] = None) -> OracleResult:
    """The optimum of a model (the dict :func:`model` returns, or one of the same shape).

    ``columns``: a fixed list of independent sets (global link indices) to optimise over,
    without generating more (a test's brute-force enumeration); by default they are generated.
    """
    if objective not in OBJECTIVES:
        raise ScenarioError(f"objective: {objective!r} is not one of {', '.join(OBJECTIVES)}")
    if routing not in ROUTINGS:
        raise ScenarioError(f"routing: {routing!r} is not one of {', '.join(ROUTINGS)}")
    if not m["flows"]:
        raise ScenarioError("flows: the scenario has no flows, so there is nothing to optimise")
    t0 = time.perf_counter()
    p = _Problem(m, routing)
    if columns is not None:
        cols = [tuple(sorted(p.local[k] for k in c if k in p.local)) for c in columns]
        cols = [c for c in dict.fromkeys(cols) if c]
        generate = False
    else:
        cols = [(li,) for li in range(p.n_links)]
        generate = True
    iterations = 0
    while True:
        iterations += 1
        y, mu, sigma, value = _master(p, cols, objective)
        if not generate or iterations >= MAX_ITERATIONS:
            break
        weight, best = _max_weight_independent_set(mu, p.conflicts)
        if weight <= sigma * (1.0 + TOLERANCE) + 1e-12 or best in set(cols):
            break
        cols.append(best)
    solve_s = time.perf_counter() - t0
    y = np.maximum(y, 0.0)
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
        "utility": log_utility(rates),
        "aggregate_bps": float(rates.sum()),
        "min_rate_bps": float(rates.min()),
        "links": p.n_links,
        "conflicts": len(p.conflicts),
        "columns": len(cols),
        "iterations": iterations,
        "solve_s": solve_s,
    }
    return OracleResult(flows=flows, summary=summary, links=links,
                        columns=[tuple(p.links[i] for i in c) for c in cols])


def compare_run(result: OracleResult, measured: pd.DataFrame,
                optimal_utility: float, optimal_aggregate_bps: float) -> OracleResult:
    """Adds a run's measured rates (a flows table: ``flow``, ``throughput_bps``) to ``result``:
    per flow ``measured_bps`` and ``measured_over_optimal`` (against ``result``'s rates); in the
    summary the measured utility and aggregate and their fractions of the bounds that hold for
    them: the proportional-fair optimum's utility and the largest aggregate."""
    got = measured.set_index("flow")["throughput_bps"]
    missing = [int(f) for f in result.flows["flow"] if f not in got.index]
    if missing:
        raise XlayerError(f"flows.csv: flows {missing} of the scenario are missing")
    flows = result.flows.copy()
    flows["measured_bps"] = [float(got[f]) for f in flows["flow"]]
    flows["measured_over_optimal"] = flows["measured_bps"] / flows["rate_bps"]
    summary = dict(result.summary)
    summary["measured_utility"] = log_utility(flows["measured_bps"])
    summary["measured_aggregate_bps"] = float(flows["measured_bps"].sum())
    summary["optimal_utility"] = optimal_utility
    summary["optimal_aggregate_bps"] = optimal_aggregate_bps
    summary["fraction_utility"] = (summary["measured_utility"] / optimal_utility
                                   if optimal_utility else float("nan"))
    summary["fraction_aggregate"] = (summary["measured_aggregate_bps"] / optimal_aggregate_bps
                                     if optimal_aggregate_bps else float("nan"))
    return OracleResult(flows=flows, summary=summary, links=result.links, columns=result.columns)


def oracle(source: Union[str, "Path", Mapping[str, Any], None] = None,
           objective: str = "proportional", routing: str = "static",
           overrides: Iterable[str] = (), seed: Optional[int] = None) -> OracleResult:
    """The optimum of a scenario (TOML path, dict, None for the default) or, given a result
    folder (``scenario.toml`` + ``flows.csv``), the optimum of the scenario it ran with the
    run's measured rates beside it and its fractions of the optimal utility and aggregate
    (:func:`compare_run`). ``objective``: proportional (sum of log rates), aggregate or maxmin;
    ``routing``: static (the scenario's routes) or multipath (free multi-commodity flow).

    >>> o = xlayer.oracle("scenarios/chain.toml")
    >>> o.flows[["flow", "rate_bps"]]; o.summary["utility"], o.summary["aggregate_bps"]
    """
    folder = Path(source) if isinstance(source, (str, Path)) else None
    if folder is not None and folder.is_dir():
        from xlayer.results import read_csv_table
        from xlayer.scenario import load_toml_file

        scen = folder / "scenario.toml"
        if not scen.is_file():
            raise XlayerError(f"{folder}: not a result folder (no scenario.toml)")
        raw = load_toml_file(scen)
        m = model(raw, overrides, seed)
        res = {obj: solve(m, obj, routing) for obj in dict.fromkeys([objective, "proportional",
                                                                     "aggregate"])}
        measured = read_csv_table(folder / "flows.csv", ("flow", "throughput_bps"))
        return compare_run(res[objective], measured, res["proportional"].summary["utility"],
                           res["aggregate"].summary["aggregate_bps"])
    return solve(model(source, overrides, seed), objective, routing)
