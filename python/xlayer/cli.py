"""The ``xlayer`` command.

    xlayer run [SCENARIO] [--seed N] [--out DIR] [--set KEY=VALUE ...] [--json] [--quiet]
               [--allow-python-optimizers]
    xlayer scenario [SCENARIO] [--seed N] [--set KEY=VALUE ...]
    xlayer params [SCENARIO] [--json] [--allow-python-optimizers]
    xlayer tunables [--json]
    xlayer sweep SWEEP.toml [--out DIR] [--workers N | --scheduler tcp://host:port] [--set ...]
               [--allow-failures] [--no-workers-timeout S] [--allow-python-optimizers]
    xlayer compare SCENARIO --stacks A,B [--seeds N] [same options as sweep]
    xlayer plot DIR [--out DIR]
    xlayer report DIR [--out FILE]

Without SCENARIO the built-in default scenario runs. Every error xlayer expects (a bad scenario
field, malformed TOML, a missing file, an unreachable node) is printed as one line
``xlayer: error: <message>`` on stderr with exit status 2, no traceback, and no result folder.
A scenario naming Python optimizer classes runs only with ``--allow-python-optimizers``.
``xlayer sweep`` and ``compare`` exit 1 when runs failed (saying how many) unless
``--allow-failures``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence

from xlayer import _core
from xlayer.errors import XlayerError
from xlayer.sweeps import NO_WORKERS_TIMEOUT_S

if TYPE_CHECKING:
    from rich.console import Console

    from xlayer.results import Result

__all__ = ["main"]

EXIT_ERROR = 2
#: `xlayer sweep` / `compare` when runs failed (without --allow-failures).
EXIT_RUNS_FAILED = 1
EXIT_INTERRUPTED = 130
#: Per-flow rows printed in the summary; the rest are in flows.csv.
MAX_FLOW_ROWS = 50


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``xlayer`` console script; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "command_fn"):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        return args.command_fn(args)
    except (XlayerError, _CommandError) as e:
        return _fail(str(e))
    except OSError as e:
        return _fail(_os_message(e))
    except KeyboardInterrupt:
        print("xlayer: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xlayer",
        description="xlayer: wireless multi-hop network simulator.",
        epilog="Scenario fields: docs/scenario.md. Example: xlayer run scenarios/chain.toml "
        "--seed 3 --out results/chain --set flows[0].rate_bps=5e5",
    )
    parser.add_argument("--version", action="version", version=f"xlayer {_core.__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    def scenario_args(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "scenario", nargs="?", metavar="SCENARIO",
            help="scenario TOML file (default: the built-in default scenario)",
        )
        p.add_argument("--seed", type=int, help="replace the scenario's seed")
        p.add_argument(
            "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
            help="override a scenario field, e.g. topology.count=3, radio.rts_cts=true, "
            "flows[0].rate_bps=2e6 (the value is a TOML value; a bare word is a string); "
            "may be repeated",
        )

    def allow_python_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--allow-python-optimizers", dest="allow_python", action="store_true",
            help='let the scenario name Python optimizer classes ([[optimizers]] python = '
            '"module:Class"): their modules are imported and run, so only for files you trust '
            "(refused without this flag)",
        )

    def dask_args(p: argparse.ArgumentParser, set_help: str) -> None:
        """Where a sweep runs (--workers | --scheduler), --set, --quiet, the opt-ins."""
        where = p.add_mutually_exclusive_group()
        where.add_argument("--workers", type=int, metavar="N",
                           help="local Dask workers, one process each (default: one per core)")
        where.add_argument("--scheduler", metavar="ADDRESS",
                           help="use the running Dask scheduler at ADDRESS (tcp://host:port)")
        p.add_argument("--set", dest="overrides", action="append", default=[],
                       metavar="KEY=VALUE", help=set_help)
        p.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
        p.add_argument("--allow-failures", action="store_true",
                       help="exit 0 even when runs failed (default: exit 1 and say how many)")
        p.add_argument("--no-workers-timeout", type=float, metavar="SECONDS",
                       default=NO_WORKERS_TIMEOUT_S,
                       help="fail when the cluster has had no worker for this long while runs "
                       f"are left (default: {NO_WORKERS_TIMEOUT_S:g}); the folder stays "
                       "resumable")
        allow_python_arg(p)

    p_run = sub.add_parser("run", help="run a scenario and print its summary")
    scenario_args(p_run)
    p_run.add_argument("--out", metavar="DIR", help="write the result folder DIR (atomically)")
    p_run.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p_run.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    allow_python_arg(p_run)
    p_run.set_defaults(command_fn=_cmd_run)

    p_sc = sub.add_parser("scenario", help="print a scenario as run: validated, defaults filled")
    scenario_args(p_sc)
    p_sc.set_defaults(command_fn=_cmd_scenario)

    p_params = sub.add_parser("params", help="list the tuning parameters of the layers")
    p_params.add_argument("scenario", nargs="?", metavar="SCENARIO",
                          help="scenario whose network to ask (default: the built-in default)")
    p_params.add_argument("--json", action="store_true", help="print them as JSON")
    allow_python_arg(p_params)
    p_params.set_defaults(command_fn=_cmd_params, seed=None, overrides=[])
    p_tun = sub.add_parser(
        "tunables",
        help="list every parameter and event of every layer's tuning layer (ECLAIR)",
        description="Every parameter optimizers can read (and set, when settable) and every "
        "event they can register for, per layer, with type and unit. Per-level parameters are "
        "addressed as NAME.<level> (mac.cw_min.0), NAME.<neighbour> or NAME.<destination> with a "
        "node id (net.etx.3), per-flow ones as NAME.<flow> (tcp.rwnd.2).",
    )
    p_tun.add_argument("--json", action="store_true", help="print them as JSON")
    p_tun.set_defaults(command_fn=_cmd_tunables)
    p_sweep = sub.add_parser(
        "sweep", help="run a sweep (grid x stacks x seeds) on Dask; resumes an earlier one",
        description="Run every run of a sweep file on a Dask cluster and write the sweep "
        "folder; running it again into the same folder skips the finished runs. Format: "
        "docs/sweep.md.",
    )
    p_sweep.add_argument("sweep", metavar="SWEEP", help="sweep TOML file")
    p_sweep.add_argument("--out", metavar="DIR",
                         help="sweep folder (default: results/<sweep name>)")
    dask_args(p_sweep, "override a field of the base scenario (as in xlayer run); may be repeated")
    p_sweep.set_defaults(command_fn=_cmd_sweep)

    p_cmp = sub.add_parser(
        "compare", help="run one scenario under several protocol stacks and compare them",
        description="Run SCENARIO once per stack (stack.preset) and seed, as a sweep on Dask "
        "(resumable, in --out), and print the main metrics per stack with 95 %% confidence "
        "intervals. Stacks: " + ", ".join(_core_presets()) + ".",
    )
    p_cmp.add_argument("scenario", metavar="SCENARIO", help="scenario TOML file")
    p_cmp.add_argument("--stacks", required=True, metavar="A,B,...",
                       help="comma-separated stack presets, e.g. tcp-sack,tcp-few,tfrc-ecn")
    p_cmp.add_argument("--seeds", default="1", metavar="N|S1,S2,...",
                       help="N: seeds 1..N; or a comma-separated list (default: 1)")
    p_cmp.add_argument("--out", metavar="DIR",
                       help="sweep folder (default: results/compare-<scenario name>)")
    dask_args(p_cmp, "override a field of the scenario (as in xlayer run); may be repeated")
    p_cmp.set_defaults(command_fn=_cmd_compare)

    p_or = sub.add_parser(
        "oracle", help="the optimum of a scenario's network utility problem, or how far a run "
        "is from it",
        description="Solve the network utility problem of SCENARIO (links, capacities and "
        "conflicts from the simulator's own PHY and MAC model) over the independent sets of its "
        "conflict graph and print each flow's optimal rate; given a result folder, print the "
        "run's measured rates beside them and its fractions of the optimal utility and "
        "aggregate. Needs cvxpy and clarabel for the proportional-fair objective "
        "(pip install 'xlayer[oracle]').",
    )
    p_or.add_argument("scenario", nargs="?", metavar="SCENARIO|RESULT_DIR",
                      help="scenario TOML file or a run's result folder (default: the built-in "
                      "default scenario)")
    p_or.add_argument("--seed", type=int, help="replace the scenario's seed")
    p_or.add_argument("--set", dest="overrides", action="append", default=[],
                      metavar="KEY=VALUE", help="override a scenario field (as in xlayer run)")
    p_or.add_argument("--objective", default="proportional",
                      choices=("proportional", "aggregate", "maxmin"),
                      help="sum of log rates (default), aggregate rate, or smallest rate")
    p_or.add_argument("--routing", default="static", choices=("static", "multipath"),
                      help="the scenario's static routes (default) or free multi-path routing")
    p_or.add_argument("--json", action="store_true", help="print the optimum as JSON on stdout")
    p_or.set_defaults(command_fn=_cmd_oracle)

    p_plot = sub.add_parser("plot", help="draw the plots of a sweep or run folder (PNG and SVG)")
    p_plot.add_argument("folder", metavar="DIR", help="a sweep folder or a run's result folder")
    p_plot.add_argument("--out", metavar="DIR", help="where to write them (default: DIR/plots)")
    p_plot.set_defaults(command_fn=_cmd_plot)

    p_report = sub.add_parser("report", help="write a self-contained HTML report of a sweep "
                              "or run folder")
    p_report.add_argument("folder", metavar="DIR", help="a sweep folder or a run's result folder")
    p_report.add_argument("--out", metavar="FILE", help="the HTML file (default: DIR/report.html)")
    p_report.set_defaults(command_fn=_cmd_report)
    return parser


class _CommandError(Exception):
    """An error of the command line itself (e.g. an unreadable scenario file)."""


def _load(args: argparse.Namespace) -> dict:
    from xlayer.scenario import load_scenario

    try:
        return load_scenario(args.scenario, args.overrides, args.seed)
    except OSError as e:
        reason = e.strerror or str(e)
        raise _CommandError(f"cannot read scenario {args.scenario}: {reason}") from None


def _cmd_run(args: argparse.Namespace) -> int:
    from xlayer.api import Simulation
    from xlayer.results import check_output_folder, summary_json

    scenario = _load(args)
    if args.out is not None:
        check_output_folder(args.out)  # refuse a bad --out before a long run, not after
    sim = Simulation(scenario, allow_python=args.allow_python)
    show_progress = not (args.quiet or args.json) and sys.stderr.isatty()
    result = sim.run(progress=show_progress)
    if args.out is not None:
        result.write(args.out)
    if args.json:
        sys.stdout.write(summary_json(result.summary))
    elif not args.quiet:
        console = _console()
        _print_summary(console, result)
        _print_optimizer_notes(console, result)
        if args.out is not None:
            console.print(f"results written to [bold]{args.out}[/bold]")
    return 0


def _print_optimizer_notes(console: Console, result: Result) -> None:
    """One line per failed optimizer and per conflict, when there are any."""
    opts = result.optimizers
    unloaded = opts["status"].isin(["failed", "layer_failed"]) if len(opts) else []
    for row in opts[unloaded].itertuples() if len(opts) else ():
        first = str(row.error).splitlines()[0] if row.error else ""
        what = "failed" if row.status == "failed" else "lost a tuning layer it used"
        console.print(f"optimizer {row.name} on node {row.node} {what} at {row.ended_s:.6g} s "
                      f"and was unloaded: {first}")
    for row in result.conflicts.itertuples():
        console.print(f"{row.kind}: node {row.node} {row.param} set to {row.value} by "
                      f"{row.optimizer} at {row.t_s:.6g} s, {row.other_value} by {row.other} "
                      f"at {row.other_t_s:.6g} s")


def _cmd_scenario(args: argparse.Namespace) -> int:
    from xlayer.scenario import scenario_to_toml

    sys.stdout.write(scenario_to_toml(_load(args)))
    return 0


def _cmd_oracle(args: argparse.Namespace) -> int:
    from xlayer.optimum import oracle

    source = args.scenario
    if source is not None and not Path(source).is_dir():
        source = _load(args)
        overrides, seed = (), None
    else:
        overrides, seed = args.overrides, args.seed
    o = oracle(source, objective=args.objective, routing=args.routing, overrides=overrides,
               seed=seed)
    if args.json:
        sys.stdout.write(json.dumps(o.to_json(), indent=2, sort_keys=True) + "\n")
        return 0
    console = _console()
    t = _table(f"optimum ({args.objective}, {args.routing} routing)")
    cols = [c for c in ("flow", "src", "dst", "hops", "rate_bps", "measured_bps",
                        "measured_over_optimal") if c in o.flows.columns]
    for col in cols:
        t.add_column(col, justify="right")
    for row in o.flows.itertuples(index=False):
        t.add_row(*(_fmt_value(getattr(row, c)) for c in cols))
    console.print(t)
    for key, value in o.summary.items():
        console.print(f"{key}: {_fmt_value(value)}")
    return 0


def _cmd_params(args: argparse.Namespace) -> int:
    from xlayer.api import Simulation

    params = Simulation(_load(args), allow_python=args.allow_python).params()
    if args.json:
        sys.stdout.write(json.dumps(params, indent=2, sort_keys=True) + "\n")
        return 0
    t = _table("tuning parameters (per node)")
    cols = ("name", "layer", "unit", "min", "max", "read_only", "doc")
    for col in cols:
        t.add_column(col, justify="right" if col in ("min", "max") else "left")
    for p in params:
        t.add_row(*(_fmt_value(p.get(c)) for c in cols))
    _console().print(t)
    return 0


def _cmd_tunables(args: argparse.Namespace) -> int:
    from xlayer.api import tunables

    items = tunables()
    if args.json:
        sys.stdout.write(json.dumps(items, indent=2, sort_keys=True) + "\n")
        return 0
    console = _console()
    for kind, title in (("param", "parameters (per node)"), ("event", "events")):
        t = _table(f"tuning layers: {title}")
        cols = ("name", "layer", "type", "unit", "settable", "doc")
        if kind == "param":
            cols = ("name", "layer", "type", "unit", "min", "max", "settable", "doc")
        for col in cols:
            t.add_column(col, justify="right" if col in ("min", "max") else "left")
        for p in items:
            if p["kind"] == kind:
                t.add_row(*(_fmt_value(p.get(c)) for c in cols))
        console.print(t)
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from xlayer.sweeps import load_sweep

    try:
        spec = load_sweep(args.sweep, args.overrides)
    except OSError as e:
        raise _CommandError(f"cannot read sweep {args.sweep}: {e.strerror or e}") from None
    outcome = _run_sweep(spec, args, lambda o: f"{o.planned} runs")
    return _failures_status(outcome, args)


def _failures_status(outcome: Any, args: argparse.Namespace) -> int:
    """0, or 1 (saying how many runs failed, even with --quiet) unless --allow-failures."""
    if not outcome.failed:
        return 0
    print(f"xlayer: {outcome.failed} of {outcome.planned} runs failed (recorded in "
          f"{args.out_folder}/failed; run the sweep again to retry them)"
          + ("" if args.allow_failures else "; --allow-failures exits 0 despite them"),
          file=sys.stderr)
    return 0 if args.allow_failures else EXIT_RUNS_FAILED


def _run_sweep(spec: Any, args: argparse.Namespace, headline: Any) -> Any:
    """Plans (validating every run's scenario first), runs on Dask and prints the outcome and
    the per-stack table; ``headline(outcome)`` opens the outcome line. Returns the outcome."""
    from xlayer.sweeps import plan_runs, run_planned

    if args.workers is not None and args.workers < 1:
        raise _CommandError(f"--workers: must be at least 1, found {args.workers}")
    if not args.no_workers_timeout > 0 or math.isinf(args.no_workers_timeout):
        raise _CommandError("--no-workers-timeout: must be a positive number of seconds, found "
                            f"{args.no_workers_timeout:g}")
    out = args.out if args.out is not None else f"results/{spec.name}"
    args.out_folder = out
    runs = plan_runs(spec)
    show_progress = not args.quiet and sys.stderr.isatty()
    with _dask_client_logs_silenced():
        outcome = run_planned(spec, runs, out, workers=args.workers, scheduler=args.scheduler,
                              progress=show_progress, allow_python=args.allow_python,
                              no_workers_timeout_s=args.no_workers_timeout)
    if not args.quiet:
        console = _console()
        console.print(
            f"{headline(outcome)}: {outcome.skipped} already done, {outcome.ran} run now, "
            f"{outcome.failed} failed; written to [bold]{out}[/bold]"
        )
        for key, message in outcome.failures[:10]:
            console.print(f"  failed {key}: {_one_line(message)}")
        _print_sweep_table(console, out)
    return outcome


@contextlib.contextmanager
def _dask_client_logs_silenced() -> Iterator[None]:
    """Dask's client logs a traceback when it loses its scheduler; the sweep reports that
    itself in one line, so the command keeps to its one-line errors."""
    logger = logging.getLogger("distributed.client")

    def below_critical(record: logging.LogRecord) -> bool:
        return record.levelno >= logging.CRITICAL

    logger.addFilter(below_critical)  # a filter, since Dask may set the logger's level itself
    try:
        yield
    finally:
        logger.removeFilter(below_critical)


def _core_presets() -> List[str]:
    return list(_core.presets())


def compare_sweep(scenario: str, stacks: Sequence[str], seeds: Any,
                  overrides: Sequence[str] = ()) -> Dict[str, Any]:
    """The sweep document ``xlayer compare`` runs: ``scenario`` under each stack preset."""
    known = _core_presets()
    if not stacks:
        raise _CommandError("--stacks: name at least one stack")
    for name in stacks:
        if name not in known:
            raise _CommandError(f"--stacks: unknown stack {name!r}; known: {', '.join(known)}")
    if len(set(stacks)) != len(stacks):
        raise _CommandError("--stacks: a stack is named twice")
    path = Path(scenario)
    if not path.is_file():
        raise _CommandError(f"cannot read scenario {scenario}: no such file")
    return {
        "name": f"compare-{path.stem}",
        "scenario": str(path.resolve()),
        "overrides": list(overrides),
        "stacks": {name: {"stack": {"preset": name}} for name in stacks},
        "seeds": seeds,
    }


def _parse_seeds(text: str) -> Any:
    try:
        if "," in text:
            seeds = [int(x) for x in text.split(",") if x.strip()]
            if not seeds or min(seeds) < 0:
                raise ValueError
            return seeds
        n = int(text)
        if n < 1:
            raise ValueError
        return n
    except ValueError:
        raise _CommandError(f"--seeds: a count N >= 1 or a list of seeds, found {text!r}") from None


def _cmd_compare(args: argparse.Namespace) -> int:
    from xlayer.sweeps import load_sweep

    stacks = [s.strip() for s in args.stacks.split(",") if s.strip()]
    spec = load_sweep(compare_sweep(args.scenario, stacks, _parse_seeds(args.seeds),
                                    args.overrides))
    outcome = _run_sweep(
        spec, args,
        lambda o: f"{len(stacks)} stacks x {o.planned // max(len(stacks), 1)} seeds")
    return _failures_status(outcome, args)


def _print_sweep_table(console: Console, folder: str) -> None:
    """Mean ± 95 % confidence half-width of the main metrics per stack and swept values."""
    from xlayer.analysis import load, summarize

    sweep = load(folder, rebuild=False)
    metrics = [("aggregate_throughput_bps", "aggregate Mbit/s", 1e6, 3),
               ("jain_index", "Jain", 1.0, 3),
               ("log_utility", "log utility", 1.0, 1),
               ("starved_flows", "starved", 1.0, 1),
               ("median_flow_throughput_bps", "median flow kbit/s", 1e3, 1)]
    table = summarize(sweep, [m for m, _, _, _ in metrics])
    if table.empty:
        return
    keys = ["stack"] + sweep.swept
    t = _table("mean ± 95 % confidence interval over seeds")
    for k in keys:
        t.add_column(k)
    for _, label, _, _ in metrics:
        t.add_column(label, justify="right")
    t.add_column("runs", justify="right")
    for group, df in table.groupby(keys, sort=False, dropna=False):
        group = group if isinstance(group, tuple) else (group,)
        cells = [_fmt_value(v) for v in group]
        by_metric = df.set_index("metric")
        for metric, _, unit, digits in metrics:
            mean = by_metric.loc[metric, "mean"] / unit
            half = by_metric.loc[metric, "ci_half"] / unit
            cells.append(f"{_fmt_float(mean, digits)} ± {_fmt_float(half, digits)}")
        cells.append(_fmt_value(int(by_metric["n"].iloc[0])))
        t.add_row(*cells)
    console.print(t)


def _cmd_plot(args: argparse.Namespace) -> int:
    from xlayer.plots import plot_folder

    files = plot_folder(args.folder, args.out)
    for f in files:
        print(f)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from xlayer.report import write_report

    print(write_report(args.folder, args.out))
    return 0


# ----------------------------------------------------------------------------------------------
# Output


def _table(title: str, **options: Any) -> Any:
    """A rich table in the house style (imported here: rich is not needed for --help)."""
    from rich import box
    from rich.table import Table

    options.setdefault("box", box.SIMPLE_HEAD)
    return Table(title=title, **options)


def _console() -> "Console":
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        # Piped or captured: no colour, and wide enough that the flow table is not squeezed.
        console = Console(width=120, no_color=True, highlight=False)
    return console


def _print_summary(console: Console, result: Result) -> None:
    s = result.summary
    t = _table(f"xlayer — {s.get('name', '')}", show_header=False)
    t.add_column("what")
    t.add_column("value", justify="right")
    wall = s.get("wall_s")
    events = s.get("events")
    rows = [
        ("seed", _fmt_value(s.get("seed"))),
        ("nodes / flows", f"{_fmt_value(s.get('nodes'))} / {_fmt_value(s.get('flows'))}"),
        ("simulated time", _fmt_unit(s.get("sim_time_s"), 1, "s", 2)),
        ("aggregate throughput", _fmt_unit(s.get("aggregate_throughput_bps"), 1e6, "Mbit/s", 3)),
        ("Jain's fairness index", _fmt_float(s.get("jain_index"), 4)),
        ("log utility", _fmt_float(s.get("log_utility"), 3)),
        ("starved flows", _fmt_value(s.get("starved_flows"))),
        ("delivery ratio", _fmt_float(s.get("delivery_ratio"), 3)),
        ("mean delay", _fmt_unit(s.get("delay_mean_s"), 1e-3, "ms", 2)),
        ("events", _fmt_value(events)),
        ("wall time", _fmt_unit(wall, 1, "s", 2)),
    ]
    if isinstance(events, (int, float)) and isinstance(wall, (int, float)) and wall > 0:
        rows.append(("events per second", f"{events / wall:,.0f}"))
    for what, value in rows:
        t.add_row(what, value)
    console.print(t)
    _print_flows(console, result)


def _print_flows(console: Console, result: Result) -> None:
    flows = result.flows
    if flows.empty:
        console.print("no flows")
        return
    t = _table(
        "flows (throughput in kbit/s, delays in ms)", pad_edge=False,
        collapse_padding=True, show_edge=False,
    )
    for title in ("flow", "src→dst", "hops", "sent", "recv", "kbit/s", "deliv", "delay",
                  "p50", "p95"):
        t.add_column(title, justify="right", no_wrap=True)
    for row in flows.head(MAX_FLOW_ROWS).to_dict("records"):
        t.add_row(
            _fmt_value(row.get("flow")),
            f"{_fmt_value(row.get('src'))}→{_fmt_value(row.get('dst'))}",
            _fmt_value(row.get("hops")),
            _fmt_value(row.get("sent")),
            _fmt_value(row.get("received")),
            _fmt_float(_scale(row.get("throughput_bps"), 1e3), 1),
            _fmt_float(row.get("delivery_ratio"), 3),
            _fmt_float(_scale(row.get("delay_mean_s"), 1e-3), 2),
            _fmt_float(_scale(row.get("delay_median_s"), 1e-3), 2),
            _fmt_float(_scale(row.get("delay_p95_s"), 1e-3), 2),
        )
    console.print(t)
    if len(flows) > MAX_FLOW_ROWS:
        console.print(f"… and {len(flows) - MAX_FLOW_ROWS} more flows (write them with --out)")


def _scale(value: Any, unit: float) -> Any:
    return value / unit if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _fmt_float(value: Any, digits: int) -> str:
    if _is_missing(value):
        return "—"
    try:
        return f"{float(value):,.{digits}f}"
    except (TypeError, ValueError):
        return str(value)


def _fmt_unit(value: Any, unit: float, name: str, digits: int) -> str:
    if _is_missing(value):
        return "—"
    return f"{_fmt_float(_scale(value, unit), digits)} {name}"


def _fmt_value(value: Any) -> str:
    if _is_missing(value):
        return "—"
    if hasattr(value, "item"):  # numpy scalar from a DataFrame row
        value = value.item()
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# ----------------------------------------------------------------------------------------------
# Errors


def _fail(message: str) -> int:
    print(f"xlayer: error: {_one_line(message)}", file=sys.stderr)
    return EXIT_ERROR


def _one_line(message: str) -> str:
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())


def _os_message(e: OSError) -> str:
    if e.filename is not None and e.strerror:
        return f"{e.filename}: {e.strerror}"
    return str(e)
