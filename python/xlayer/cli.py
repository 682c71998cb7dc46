"""The ``xlayer`` command.

    xlayer run [SCENARIO] [--seed N] [--out DIR] [--set KEY=VALUE ...] [--json] [--quiet]
               [--allow-python-optimizers]
    xlayer scenario [SCENARIO] [--seed N] [--set KEY=VALUE ...]
    xlayer params [SCENARIO] [--json] [--allow-python-optimizers]
    xlayer tunables [--json]
    xlayer sweep SWEEP.toml [--out DIR] [--workers N | --scheduler tcp://host:port] [--set ...]
               [--allow-failures] [--no-workers-timeout S] [--allow-python-optimizers]
    xlayer compare SCENARIO --stacks A,B [--seeds N] [same options as sweep]
    xlayer oracle [SCENARIO|RESULT_DIR|SWEEP_DIR] [--objective O] [--routing R] [--json]
               [--time-limit S] [--gap G]
    xlayer plot DIR [--out DIR] [--format png,svg,pdf] [--dpi N] [--style STYLE] [--quiet]
               [--oracle]
    xlayer report DIR [--out FILE] [--style STYLE]
    xlayer view [RESULT_DIR|SCENARIO] [--out FILE] [--frames N] [--seed N] [--set KEY=VALUE ...]
    xlayer flavor FILE.pcap [--json]

Without SCENARIO the built-in default scenario runs. Every error xlayer expects (a bad scenario
field, malformed TOML, a missing file, an unreachable node) is printed as one line
``xlayer: error: <message>`` on stderr with exit status 2, no traceback, and no result folder.
A scenario naming Python optimizer classes runs only with ``--allow-python-optimizers``.
``xlayer sweep`` and ``compare`` exit 1 when runs failed (saying how many) unless
``--allow-failures``; after their table they print each stack's fractions of the optimum
(``xlayer.optimum``; ``--no-oracle`` skips it), or one line saying why they cannot.
``xlayer oracle`` on a scenario or a run stops its solve at the next bound on a first Ctrl-C and
prints what it found (exit status 130); a second Ctrl-C aborts.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence

from xlayer import _core
from xlayer.errors import XlayerError

if TYPE_CHECKING:
    from rich.console import Console

    from xlayer.results import Result

__all__ = ["console", "main"]

EXIT_ERROR = 2
#: `xlayer sweep` / `compare` when runs failed (without --allow-failures).
EXIT_RUNS_FAILED = 1
EXIT_INTERRUPTED = 130
#: Per-flow rows printed in the summary; the rest are in flows.csv.
MAX_FLOW_ROWS = 50
#: ``xlayer plot``'s formats and PNG resolution (as xlayer.plots.FORMATS and DEFAULT_DPI, which
#: the help text cannot import without loading matplotlib; a test checks they agree).
PLOT_FORMATS = ("png", "svg", "pdf")
PLOT_DPI = 150
#: The subcommands, in the order ``xlayer --help`` lists them.
COMMANDS = ("run", "scenario", "params", "tunables", "sweep", "compare", "oracle", "plot", "report",
            "view", "flavor", "reproduce")
#: ``--no-workers-timeout``'s default, as xlayer.sweeps.NO_WORKERS_TIMEOUT_S (a test checks they
#: agree): importing xlayer.sweeps for it cost every ``xlayer run`` the module (and more files
#: read when the page cache is cold).
NO_WORKERS_TIMEOUT_S = 60.0


def console() -> int:
    """Entry point of the ``xlayer`` console script and of ``python -m xlayer``: :func:`main`
    on the command line, then ``gc.freeze()`` before the process ends.

    The interpreter's exit runs a last cyclic garbage collection over every object alive, most
    of them the modules, classes and functions the imports made; frozen, they are skipped: 8 ms
    of a 60 ms short ``xlayer run`` (2 % of mesh-7x7's whole process). Nothing is lost by it:
    the commands have written and closed their files by then, the standard streams are flushed
    by the interpreter, and ``atexit`` handlers and ``weakref.finalize`` callbacks still run.
    """
    status = main()
    gc.freeze()
    return status


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The ``xlayer`` command on `argv` (default: the process's arguments); returns the exit
    status."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = _parser(words[0] if words and words[0] in COMMANDS else None)
    args = parser.parse_args(words)
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


def _parser(command: Optional[str] = None) -> argparse.ArgumentParser:
    """The command line's parser; with `command`, only that subcommand's (the others' 80
    arguments cost a run's process a few milliseconds of help formatters and message-catalog
    look-ups), else every one (``xlayer --help``, an unknown command)."""
    parser = argparse.ArgumentParser(
        prog="xlayer",
        description="xlayer: wireless multi-hop network simulator.",
        epilog="Scenario fields: docs/scenario.md. Example: xlayer run scenarios/chain.toml "
        "--seed 3 --out results/chain --set flows[0].rate_bps=5e5",
    )
    parser.add_argument("--version", action="version", version=f"xlayer {_core.__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    def wanted(name: str) -> bool:
        return command is None or command == name

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

    def no_oracle_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument("--no-oracle", action="store_true",
                       help="do not print the runs' fractions of the optimum (xlayer oracle)")

    def dask_args(p: argparse.ArgumentParser, set_help: str) -> None:
        """Where a sweep runs (--workers | --scheduler), --set, --quiet, the opt-ins."""
        where = p.add_mutually_exclusive_group()
        where.add_argument("--workers", type=int, metavar="N",
                           help="local Dask workers, one process each (default: one per core)")
        where.add_argument("--scheduler", metavar="ADDRESS",
                           help="use the running Dask scheduler at ADDRESS (tcp://host:port)")
        p.add_argument("--shared-folder", action="store_true",
                       help="with --scheduler: the workers see the --out folder at the same "
                       "absolute path (a shared file system), so they write the run folders "
                       "themselves (the local cluster always does)")
        p.add_argument("--batch", type=int, metavar="N", dest="batch_runs",
                       help="runs per Dask task (default: chosen from the runs' measured CPU "
                       "time, about 0.5 s of it per task; long runs go one per task)")
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

    if wanted("run"):
        p_run = sub.add_parser("run", help="run a scenario and print its summary")
        scenario_args(p_run)
        p_run.add_argument("--out", metavar="DIR", help="write the result folder DIR (atomically)")
        p_run.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
        p_run.add_argument("--view", action="store_true",
                           help="also write DIR/view.html (needs --out): the network and the run, "
                           "animated (as xlayer view)")
        p_run.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
        allow_python_arg(p_run)
        p_run.set_defaults(command_fn=_cmd_run)

    if wanted("scenario"):
        p_sc = sub.add_parser("scenario", help="print a scenario as run: validated, defaults filled")
        scenario_args(p_sc)
        p_sc.set_defaults(command_fn=_cmd_scenario)

    if wanted("params"):
        p_params = sub.add_parser("params", help="list the tuning parameters of the layers")
        p_params.add_argument("scenario", nargs="?", metavar="SCENARIO",
                              help="scenario whose network to ask (default: the built-in default)")
        p_params.add_argument("--json", action="store_true", help="print them as JSON")
        allow_python_arg(p_params)
        p_params.set_defaults(command_fn=_cmd_params, seed=None, overrides=[])
    if wanted("tunables"):
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
    if wanted("sweep"):
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
        no_oracle_arg(p_sweep)
        p_sweep.set_defaults(command_fn=_cmd_sweep)

    if wanted("compare"):
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
        no_oracle_arg(p_cmp)
        p_cmp.set_defaults(command_fn=_cmd_compare)

    if wanted("oracle"):
        p_or = sub.add_parser(
            "oracle", help="the optimum of a scenario's network utility problem, or how far a run "
            "or a sweep is from it",
            description="Solve the network utility problem of SCENARIO (links, capacities and "
            "conflicts from the simulator's own PHY and MAC model) over the independent sets of its "
            "conflict graph and print each flow's optimal rate; given a result folder, print the "
            "run's measured rates beside them and its fractions of the optimal utility and "
            "aggregate; given a sweep folder, those fractions per stack and swept values. Needs "
            "cvxpy and clarabel for the proportional-fair objective "
            "(pip install 'xlayer[oracle]').",
        )
        p_or.add_argument("scenario", nargs="?", metavar="SCENARIO|RESULT_DIR|SWEEP_DIR",
                          help="scenario TOML file, a run's result folder or a sweep folder "
                          "(default: the built-in default scenario)")
        p_or.add_argument("--seed", type=int, help="replace the scenario's seed")
        p_or.add_argument("--set", dest="overrides", action="append", default=[],
                          metavar="KEY=VALUE", help="override a scenario field (as in xlayer run)")
        p_or.add_argument("--objective", default="proportional",
                          choices=("proportional", "aggregate", "maxmin"),
                          help="sum of log rates (default), aggregate rate, or smallest rate")
        p_or.add_argument("--routing", choices=("static", "multipath"),
                          help="the scenario's static routes or free multi-path routing (default: "
                          "static for a scenario; for a run, static if it routed statically)")
        p_or.add_argument("--backoff", default="none", choices=("none", "mean"),
                          help="charge no backoff per attempt (default: the bound) or a lone DCF "
                          "sender's mean backoff (several senders beat it)")
        p_or.add_argument("--time-limit", type=float, metavar="S",
                          help="end each solve at the first exact pricing after S seconds; the "
                          "summary's bound and gap say how close it got (default: solve to the "
                          "optimum)")
        p_or.add_argument("--gap", type=float, metavar="G",
                          help="end each solve once its upper bound is within G of its optimum "
                          "found: relative for the aggregate and max-min, per flow in ln(rate) for "
                          "proportional fairness (default 1e-5)")
        p_or.add_argument("--json", action="store_true", help="print the optimum as JSON on stdout")
        p_or.set_defaults(command_fn=_cmd_oracle)

    if wanted("plot"):
        p_plot = sub.add_parser(
            "plot", help="draw the plots of a sweep or run folder (PNG, SVG and PDF)",
            description="Draw every plot of a sweep folder or a run's result folder into "
            "DIR/plots (README: Sweeps, analysis and reports). A progress bar shows on a terminal "
            "when it takes a while.")
        p_plot.add_argument("folder", metavar="DIR", help="a sweep folder or a run's result folder")
        p_plot.add_argument("--out", metavar="DIR", help="where to write them (default: DIR/plots)")
        p_plot.add_argument("--format", default=",".join(PLOT_FORMATS), metavar="F1,F2",
                            help="comma-separated file formats among "
                            f"{', '.join(PLOT_FORMATS)} (default: all three)")
        p_plot.add_argument("--dpi", type=int, default=PLOT_DPI, metavar="N",
                            help=f"resolution of PNG files, dots per inch (default: {PLOT_DPI})")
        p_plot.add_argument("--style", metavar="STYLE",
                            help="a matplotlib style (e.g. seaborn-v0_8-paper, grayscale) or a "
                            ".mplstyle file, laid over xlayer's")
        p_plot.add_argument("--quiet", "-q", action="store_true",
                            help="print nothing but errors (not even the files written)")
        p_plot.add_argument("--oracle", action="store_true",
                            help="also draw each flow's measured rate against its optimal one "
                            "(measured_vs_optimal; drawn anyway for a sweep whose oracle column "
                            "xlayer compare or sweep computed)")
        p_plot.set_defaults(command_fn=_cmd_plot)

    if wanted("report"):
        p_report = sub.add_parser("report", help="write a self-contained HTML report of a sweep "
                                  "or run folder")
        p_report.add_argument("folder", metavar="DIR", help="a sweep folder or a run's result folder")
        p_report.add_argument("--out", metavar="FILE", help="the HTML file (default: DIR/report.html)")
        p_report.add_argument("--style", metavar="STYLE",
                              help="a matplotlib style for its plots (as xlayer plot --style)")
        p_report.set_defaults(command_fn=_cmd_report)

    if wanted("view"):
        p_view = sub.add_parser(
            "view", help="write a self-contained HTML view of a network and a run, animated",
            description="Write one HTML file (nothing fetched when opened) showing the nodes, the "
            "radio links shaded by quality, each flow's route, and, stepped or animated over the "
            "run, every node's queue, the routes and each flow's throughput. Given a run's result "
            "folder it runs the folder's scenario.toml again (reading the nodes' queues and routes "
            "as it goes; the results are the same, which it checks against summary.json) and "
            "writes DIR/view.html; given a scenario it runs it and writes NAME-view.html here.")
        p_view.add_argument("source", nargs="?", metavar="RESULT_DIR|SCENARIO",
                            help="a run's result folder, or a scenario TOML file (default: the "
                            "built-in default scenario)")
        p_view.add_argument("--out", metavar="FILE",
                            help="the HTML file (default: RESULT_DIR/view.html, or NAME-view.html)")
        p_view.add_argument("--frames", type=int, default=200, metavar="N",
                            help="moments recorded, evenly spaced over the run (default: 200)")
        p_view.add_argument("--seed", type=int, help="replace the scenario's seed")
        p_view.add_argument("--set", dest="overrides", action="append", default=[],
                            metavar="KEY=VALUE", help="override a scenario field (as in xlayer run)")
        p_view.add_argument("--quiet", "-q", action="store_true",
                            help="print nothing but errors")
        allow_python_arg(p_view)
        p_view.set_defaults(command_fn=_cmd_view)
    if wanted("flavor"):
        p_flavor = sub.add_parser(
            "flavor", help="detect the TCP flavor of every connection in a capture",
            description="Read a capture (pcap or pcapng, optionally gzip-compressed; Ethernet, "
            "Linux cooked SLL/SLL2, raw IP, loopback, 802.11 with or without radiotap) and run the "
            "passive flavor detector over each TCP connection: one row per connection with its data "
            "sender (src, sport), receiver, segments, flavor (reno, newreno, westwood, cubic, bbr "
            "or unknown), SACK and confidence. README: Flavor detection on captures.")
        p_flavor.add_argument("capture", metavar="FILE", help="the capture file")
        p_flavor.add_argument("--json", action="store_true",
                              help="print a JSON list of objects with src, sport, dst, dport, "
                              "packets, flavor, sack, confidence")
        p_flavor.set_defaults(command_fn=_cmd_flavor)
    if wanted("reproduce"):
        p_rep = sub.add_parser(
            "reproduce", help="run one of the documents' experiments and judge its claims",
            description="Run a figure or table of the source documents as a sweep (on Dask), "
            "print each of the document's claims beside the measured figure with 'holds' or "
            "'does not hold', and draw the figure. The sweep folder (default "
            "results/repro-NAME[-quick]) is resumed when run again; it gets claims.json and "
            "NAME.png. Run from a checkout of the repository (the experiments use its scenarios/). "
            "README: Reproducing the documents.")
        p_rep.add_argument("name", nargs="?", metavar="NAME",
                           help="the experiment (xlayer reproduce --list names them)")
        p_rep.add_argument("--list", action="store_true",
                           help="list the experiments with their documents and run counts")
        p_rep.add_argument("--all", action="store_true", help="run every experiment in turn")
        p_rep.add_argument("--quick", action="store_true",
                           help="fewer seeds and grid points (and shorter runs where the "
                           "experiment allows): minutes on a laptop")
        p_rep.add_argument("--out", metavar="DIR",
                           help="the sweep folder (with --all: the folder that holds one per "
                           "experiment); default results/")
        p_rep.add_argument("--json", action="store_true", help="print the judged claims as JSON")
        p_rep.add_argument("--markdown", action="store_true",
                           help="print the judged claims as a Markdown table (the README's form)")
        p_rep.add_argument("--no-plot", action="store_true", help="do not draw the figure")
        rep_where = p_rep.add_mutually_exclusive_group()
        rep_where.add_argument("--workers", type=int, metavar="N",
                               help="local Dask workers, one process each (default: one per core)")
        rep_where.add_argument("--scheduler", metavar="ADDRESS",
                               help="use the running Dask scheduler at ADDRESS (tcp://host:port)")
        p_rep.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
        p_rep.set_defaults(command_fn=_cmd_reproduce)
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
    if args.view and args.out is None:
        raise _CommandError("--view: needs --out DIR, the result folder the view goes into")
    if args.out is not None:
        check_output_folder(args.out)  # refuse a bad --out before a long run, not after
    sim = Simulation(scenario, allow_python=args.allow_python)
    show_progress = not (args.quiet or args.json) and sys.stderr.isatty()
    recording = None
    if args.view:
        from xlayer._progress import ProgressBar
        from xlayer.viewer import record

        bar = ProgressBar(str(sim.scenario.get("name", "simulating"))) if show_progress \
            else None
        try:
            recording = record(sim, progress=bar)  # the same run, its queues and routes read
        finally:
            if bar is not None:
                bar.close()
    result = sim.run(progress=show_progress)
    if args.out is not None:
        result.write(args.out)
    if recording is not None:
        from xlayer.viewer import VIEW_FILE, render, write_view

        write_view(Path(args.out) / VIEW_FILE,
                   render(recording, result, sim.scenario, source=str(args.scenario or "")))
    if result.summary.get("warning"):
        # e.g. Z-MAC's set-up left nodes without a slot
        print(f"xlayer: warning: {result.summary['warning']}", file=sys.stderr)
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
    if not result._table_length("optimizers") and not result._table_length("conflicts"):
        return  # the usual case, answered without making the tables DataFrames
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
    from xlayer.optimum import OracleSweep, oracle

    for flag, value in (("--time-limit", args.time_limit), ("--gap", args.gap)):
        if value is not None and not value >= 0:  # also nan
            raise _CommandError(f"{flag}: must be 0 or more, found {value:g}")
    source = args.scenario
    if source is not None and not Path(source).is_dir():
        source = _load(args)
        overrides, seed = (), None
    else:
        overrides, seed = args.overrides, args.seed
    # A solve can take minutes (the 108-node scenarios under multi-path routing): on a
    # terminal a status line says where it stands. Not for a sweep folder (its own bar).
    status = None
    given = Path(args.scenario) if args.scenario is not None else None
    sweep = given is not None and given.is_dir() and (given / "sweep.json").is_file()
    if not args.json and not sweep and sys.stderr.isatty():
        from xlayer._progress import StatusLine

        status = StatusLine()
    # A first Ctrl-C ends a scenario's or a run's solves at their next bound, and prints what
    # they found (exit status 130); a second aborts. A sweep folder's many solves abort at once.
    stop = _StopOnInterrupt()
    told: List[bool] = []

    def progress(p: Any) -> bool:
        requested = stop.requested
        if requested and not told:
            # said here, not in the signal handler, which may run inside the status line's
            # own drawing
            told.append(True)
            msg = "stopping at the next bound (Ctrl-C again to abort)"
            if status is not None:
                status(f"oracle: {msg}")
            print(f"xlayer: {msg}", file=sys.stderr)
        elif status is not None:
            status(_solve_status(p))
        return requested

    try:
        with stop if not sweep else contextlib.nullcontext():
            o = oracle(source, objective=args.objective, routing=args.routing,
                       overrides=overrides, seed=seed, backoff=args.backoff,
                       time_limit=args.time_limit, gap=args.gap,
                       progress=None if sweep else progress)
    finally:
        if status is not None:
            status.close()
    if isinstance(o, OracleSweep):
        if args.json:
            out = {"runs": _records(o.runs), "flows": _records(o.flows)}
            sys.stdout.write(json.dumps(out, indent=2, sort_keys=True) + "\n")
            return 0
        _print_oracle_table(_console(), str(source), o)
        return 0
    done = EXIT_INTERRUPTED if o.summary.get("stopped") == "interrupted" else 0
    if args.json:
        sys.stdout.write(json.dumps(o.to_json(), indent=2, sort_keys=True) + "\n")
        return done
    _print_optimum(_console(), o)
    return done


#: The summary of ``xlayer oracle`` on a scenario or a run, in this order: (label, key, how the
#: value is shown: "text", "count", "utility" (six significant digits: a gap of 1e-5 per
#: flow shows), "bound" (the objective's: a utility, an aggregate or a smallest rate), "gap",
#: "fraction" (a percentage), or a field name of :mod:`xlayer._fields` whose unit it takes). A
#: key not listed is shown after them under its own name; ``--json`` has every key with every
#: digit.
OPTIMUM_SUMMARY = (
    ("objective", "objective", "text"), ("routing", "routing", "text"),
    ("backoff charged", "backoff", "text"),
    ("utility Σ ln(rate in bit/s)", "utility", "utility"),
    ("upper bound", "bound", "bound"), ("gap", "gap", "gap"),
    ("aggregate", "aggregate_bps", "aggregate_bps"),
    ("smallest rate", "min_rate_bps", "min_rate_bps"),
    ("links", "links", "count"), ("conflicts", "conflicts", "count"),
    ("master form", "form", "text"), ("independent sets", "columns", "count"),
    ("paths", "paths", "count"), ("iterations", "iterations", "count"),
    ("solve time", "solve_s", "solve_s"), ("solver status", "solver_status", "text"),
    ("ended", "stopped", "text"),
    ("measured rates", "measured_basis", "text"),
    ("measured utility", "measured_utility", "utility"),
    ("measured aggregate", "measured_aggregate_bps", "aggregate_bps"),
    ("optimal utility", "optimal_utility", "utility"),
    ("largest aggregate", "optimal_aggregate_bps", "aggregate_bps"),
    ("fraction of the utility", "fraction_utility", "fraction"),
    ("  at least (against the bound)", "fraction_utility_low", "fraction"),
    ("fraction of the aggregate", "fraction_aggregate", "fraction"),
    ("  at least (against the bound)", "fraction_aggregate_low", "fraction"),
)


def _print_optimum(console: "Console", o: Any) -> None:
    """The optimum of a scenario, or a run against it, as people read it: each flow's optimal
    rate (and measured rate and measured/optimal) in one unit for the column, then the
    summary (:data:`OPTIMUM_SUMMARY`)."""
    from xlayer._fields import display_unit, format_number, format_value

    s = o.summary
    flows = o.flows
    rates = list(flows["rate_bps"]) + (list(flows["measured_bps"])
                                       if "measured_bps" in flows.columns else [])
    unit = display_unit("rate_bps", rates)
    heads = {"flow": "flow", "src": "src", "dst": "dst", "hops": "hops", "rate_bps": "optimal",
             "measured_bps": "measured", "measured_over_optimal": "measured/optimal"}
    cols = [c for c in heads if c in flows.columns]
    # the title as a line of its own: a table's title wraps at the table's (narrow) width
    console.print(f"optimum ({s.get('objective')}, {s.get('routing')} routing), rates in "
                  f"{unit[0]}", markup=False, highlight=False)
    t = _table(None, pad_edge=False, collapse_padding=True, show_edge=False)
    for col in cols:
        t.add_column(heads[col], justify="right", no_wrap=True)
    for row in flows.to_dict(orient="records"):
        t.add_row(*(format_value(c, row[c], unit, with_unit=False) if c.endswith("_bps")
                    else format_number(row[c]) if c == "measured_over_optimal"
                    else _fmt_value(row[c]) for c in cols))
    console.print(t)
    objective_field = {"aggregate": "aggregate_bps", "maxmin": "min_rate_bps"}.get(
        str(s.get("objective")), "utility")
    bound_what = {"aggregate_bps": "upper bound on the aggregate",
                  "min_rate_bps": "upper bound on the smallest rate"}.get(
        objective_field, "upper bound on the utility")

    def shown(how: str, value: Any) -> str:
        if _is_missing(value):
            return "—"
        if how == "text":
            return str(value)
        if how == "count":
            return _fmt_value(value)
        if how == "bound":
            how = objective_field
        if how == "utility":
            return format_number(value, digits=6)
        if how == "fraction":
            return f"{format_number(100 * value, decimals=1)} %"
        if how == "gap":
            return ("no bound (no exact pricing ran)" if math.isinf(value)
                    else _gap_text(str(s.get("objective")), value))
        return format_value(how, value)

    t = _table(None, show_header=False)
    t.add_column("what")
    t.add_column("value", justify="right")
    for what, key, how in OPTIMUM_SUMMARY:
        if key in s:
            t.add_row(bound_what if how == "bound" else what, shown(how, s[key]))
    listed = {key for _, key, _ in OPTIMUM_SUMMARY}
    for key, value in s.items():
        if key not in listed:
            t.add_row(key, _fmt_value(value))
    console.print(t)


class _StopOnInterrupt:
    """While entered in the main thread, the first SIGINT sets :attr:`requested` instead of
    raising; the handler before it comes back at once, so a second SIGINT does what it did
    (:class:`KeyboardInterrupt`, by default). Restored on exit. Not installed where SIGINT is
    ignored (a background job of a shell without job control) or in another thread."""

    def __init__(self) -> None:
        self.requested = False
        self._installed = False
        self._before: Any = None

    def _restore(self) -> None:
        import signal

        if self._installed:
            self._installed = False
            before = self._before
            signal.signal(signal.SIGINT,
                          signal.default_int_handler if before is None else before)

    def _handle(self, signum: int, frame: Any) -> None:
        self.requested = True
        self._restore()

    def __enter__(self) -> "_StopOnInterrupt":
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return self
        before = signal.getsignal(signal.SIGINT)
        if before == signal.SIG_IGN:
            return self
        self._before = before
        signal.signal(signal.SIGINT, self._handle)
        self._installed = True
        return self

    def __exit__(self, *exc: Any) -> None:
        self._restore()


def _solve_status(p: Any) -> str:
    """An oracle solve's status line (a :class:`xlayer.optimum.SolveProgress`): which solve,
    its iteration, the independent sets and paths its master holds, how far from the optimum,
    the time so far."""
    gap = "no bound yet" if math.isinf(p.gap) else f"gap {_gap_text(p.objective, p.gap)}"
    return (f"oracle, {p.objective}: iteration {p.iteration}, {p.columns:,} sets, "
            f"{p.paths:,} paths, {gap}, {p.elapsed_s:.0f} s")


def _gap_text(objective: str, gap: float) -> str:
    """A solve's finite gap in the summary's units: per flow in ln(rate) for proportional
    fairness, else relative (a percentage, or 5.0e-04 below 0.1 %)."""
    if gap == 0:
        return "0"
    if objective == "proportional":
        return f"{gap:.1e} per flow"
    return f"{gap:.1%}" if gap >= 1e-3 else f"{gap:.1e}"


def _records(df: Any) -> List[Dict[str, Any]]:
    """A DataFrame as JSON-ready records (NaN as null)."""
    from xlayer.optimum import _plain

    return [{k: _plain(v) for k, v in row.items()} for row in df.to_dict(orient="records")]


def _print_oracle_table(console: "Console", folder: str, o: Any = None) -> None:
    """Each group's (stack and swept values) fractions of the optimum, mean and 95 % interval
    over seeds, under the sweep table; a line saying why when the oracle cannot judge the runs
    (no solver, wired links), never an error: the sweep itself went well."""
    from xlayer.analysis import interval_parts, load
    from xlayer.optimum import summarize_sweep, sweep_oracle

    sweep = load(folder, rebuild=False)
    if o is None:
        bar = None
        if sys.stderr.isatty():
            from xlayer._progress import StepProgress

            bar = StepProgress("oracle")
        try:
            o = sweep_oracle(folder, progress=(lambda done, total: bar(done, total,
                                                                       "solving the optimum"))
                             if bar is not None else None)
        except XlayerError as e:
            console.print(f"oracle: not computed: {_one_line(str(e))}", markup=False,
                          highlight=False, soft_wrap=True)
            return
        finally:
            if bar is not None:
                bar.close()
    keys = ["stack"] + sweep.swept
    table = summarize_sweep(o, keys)
    unjudged = o.runs[o.runs["fraction_aggregate"].isna()]
    for message in list(dict.fromkeys(unjudged["error"].astype(str)))[:3]:
        n = int((unjudged["error"].astype(str) == message).sum())
        console.print(f"oracle: {n} run{'s' if n != 1 else ''} not judged: "
                      f"{_one_line(message)}", markup=False, highlight=False, soft_wrap=True)
    if table.empty:
        return
    console.print("fraction of the optimum (xlayer oracle), % as mean [95 % interval]: "
                  "utility exp((U − U*)/N), aggregate over the largest", markup=False,
                  highlight=False, style="italic")
    t = _table(None, pad_edge=False, collapse_padding=True)
    for k in keys:
        t.add_column(_escape(k), overflow="fold")
    for head in ("utility %", "aggregate %", "routing", "runs"):
        t.add_column(head, justify="right", no_wrap=True)
    for row in table.to_dict(orient="records"):
        cells = []
        for metric in ("fraction_utility", "fraction_aggregate"):
            mean, bounds = interval_parts("fraction", 100 * row[metric],
                                          100 * row[f"{metric}_low"],
                                          100 * row[f"{metric}_high"], ("", 1.0))
            cells.append(f"{mean} [{bounds[0]}, {bounds[1]}]" if bounds else mean)
        t.add_row(*(_fmt_value(row[k]) for k in keys), *cells, str(row["routing"]),
                  _fmt_value(row["runs"]))
    console.print(t)


def _cmd_flavor(args: argparse.Namespace) -> int:
    from xlayer.captures import COLUMNS, capture_flavors

    rows = [{k: r[k] for k in COLUMNS} for r in capture_flavors(args.capture)]
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    console = _console()
    t = _table(f"{args.capture}: {len(rows)} TCP connection{'s' if len(rows) != 1 else ''}")
    for col in COLUMNS:
        t.add_column(col, justify="right" if col in ("sport", "dport", "packets",
                                                      "confidence") else "left")
    for r in rows:
        t.add_row(r["src"], str(r["sport"]), r["dst"], str(r["dport"]), f"{r['packets']:,}",
                  r["flavor"], "yes" if r["sack"] else "no", f"{r['confidence']:.2f}")
    console.print(t)
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from xlayer import reproduce as rep

    if args.list:
        if args.json:
            print(json.dumps([{"name": e.name, "document": e.document, "title": e.title,
                               "runs": e.run_count(False), "quick_runs": e.run_count(True)}
                              for e in rep.EXPERIMENTS.values()], indent=2))
            return 0
        console = _console()
        table = _table("the documents' experiments (xlayer reproduce NAME [--quick])")
        for col in ("name", "document", "what", "runs", "--quick"):
            table.add_column(col, justify="right" if col in ("runs", "--quick") else "left")
        for e in rep.EXPERIMENTS.values():
            table.add_row(e.name, e.document, e.title, str(e.run_count(False)),
                          str(e.run_count(True)))
        console.print(table)
        return 0
    if args.all == (args.name is not None):
        raise _CommandError("reproduce: name one experiment or give --all "
                            "(xlayer reproduce --list names them)")
    if args.workers is not None and args.workers < 1:
        raise _CommandError(f"--workers: must be at least 1, found {args.workers}")
    names = list(rep.EXPERIMENTS) if args.all else [args.name]
    for name in names:
        try:
            rep.experiment(name)
        except KeyError as e:
            raise _CommandError(str(e.args[0])) from None
    from xlayer._extras import require

    require("sweep", "xlayer reproduce")
    done = []
    show_progress = not (args.quiet or args.json or args.markdown) and sys.stderr.isatty()
    for name in names:
        exp = rep.experiment(name)
        if args.out is None:
            out = None
        elif args.all:
            out = Path(args.out) / exp.sweep_spec(args.quick)["name"]
        else:
            out = Path(args.out)
        try:
            rep.scenario_path(exp.scenario)
        except FileNotFoundError as e:
            raise _CommandError(str(e)) from None
        with _dask_client_logs_silenced():
            r = rep.reproduce(name, out, quick=args.quick, workers=args.workers,
                              scheduler=args.scheduler, progress=show_progress,
                              plot=not args.no_plot)
        done.append(r)
        if not (args.quiet or args.json or args.markdown):
            _print_reproduction(r)
    if args.json:
        print(json.dumps([{"experiment": r.experiment.name, "document": r.experiment.document,
                           "folder": str(r.folder),
                           "figure": str(r.figure) if r.figure else None,
                           "claims": [v.as_dict() for v in r.verdicts]} for r in done],
                         indent=2))
    elif args.markdown:
        sys.stdout.write(rep.claims_markdown([r.document for r in done]))
    return 0


def _print_reproduction(r: Any) -> None:
    console = _console()
    e = r.experiment
    console.print(f"[bold]{e.document}[/bold] ({e.name}): {e.title}")
    for v in r.verdicts:
        mark = "[green]holds[/green]" if v.holds else "[red]does not hold[/red]"
        console.print(f"  {mark}  {v.claim}")
        console.print(f"         criterion: {v.criterion}")
        console.print(f"         measured:  {v.measured}")
    console.print(f"  {r.holds} of {len(r.verdicts)} claims hold; runs in [bold]{r.folder}[/bold]"
                  + (f", figure {r.figure}" if r.figure else ""))


def _cmd_params(args: argparse.Namespace) -> int:
    from xlayer.api import Simulation

    scenario = _load(args)
    params = Simulation(scenario, allow_python=args.allow_python).params()
    if args.json:
        sys.stdout.write(json.dumps(params, indent=2, sort_keys=True) + "\n")
        return 0
    items = [dict(p, kind="param", settable=not p.get("read_only")) for p in params]
    _print_tunables(_console(), items, "param",
                    f"tuning parameters of every node (scenario {scenario.get('name', '')})")
    return 0


def _cmd_tunables(args: argparse.Namespace) -> int:
    from xlayer.api import tunables

    items = tunables()
    if args.json:
        sys.stdout.write(json.dumps(items, indent=2, sort_keys=True) + "\n")
        return 0
    console = _console()
    _print_tunables(console, items, "param", "tuning layers: parameters (per node)")
    _print_tunables(console, items, "event", "tuning layers: events")
    return 0


#: Units of whole quantities. The core reports every tunable as a float (``type = "float"``);
#: until its parameter declarations say which are integers, the tables show these as ``int``
#: (and ``flag`` as ``0/1``); ``--json`` gives the core's own ``type``.
WHOLE_UNITS = frozenset({"slots", "packets", "attempts", "frames", "bytes", "node", "nodes",
                         "level", "destinations"})
#: Below this console width the tunables' descriptions go on a line of their own.
WIDE_TUNABLES = 110


def _tunable_type(item: Dict[str, Any]) -> str:
    unit = item.get("unit")
    if unit == "flag":
        return "0/1"
    if unit in WHOLE_UNITS:
        return "int"
    return str(item.get("type") or "float")


def _bound(value: Any) -> str:
    """A parameter's bound: integers as integers, ``∞`` for unbounded (the core's infinity or
    largest float), powers of ten past a million compact (``1e12``)."""
    from xlayer.analysis import format_number

    if _is_missing(value):
        return "—"
    v = float(value)
    if math.isinf(v) or abs(v) >= 1.7e308:
        return "∞" if v > 0 else "−∞"
    if v.is_integer() and abs(v) < 1e10:
        return f"{int(v):,}"
    if v != 0 and (abs(v) >= 1e10 or abs(v) < 1e-3):
        mantissa, exponent = f"{v:.3g}".split("e") if "e" in f"{v:.3g}" else (f"{v:.3g}", "0")
        return f"{mantissa}e{int(exponent)}"
    return format_number(v)


def _print_tunables(console: "Console", items: Sequence[Dict[str, Any]], kind: str,
                    title: str) -> None:
    """The parameters (``kind = "param"``) or events of ``items``: name (never cut), layer,
    type, range, unit, settable and description — one table on a console of at least
    :data:`WIDE_TUNABLES` columns, else a listing grouped by layer with each description on a
    line of its own under its entry."""
    import textwrap

    rows = []
    for p in (p for p in items if p.get("kind") == kind):
        cells = [str(p.get("name", "")), str(p.get("layer", "")), _tunable_type(p)]
        if kind == "param":
            cells.append(f"{_bound(p.get('min'))} … {_bound(p.get('max'))}")
        cells.append(str(p.get("unit") or ""))
        if kind == "param":
            cells.append("yes" if p.get("settable") else "no")
        rows.append((cells, str(p.get("doc", ""))))
    layers = list(dict.fromkeys(c[1] for c, _ in rows))  # grouped by layer, first seen first
    rows.sort(key=lambda row: layers.index(row[0][1]))
    heads = ["name", "layer", "type"] + (["range"] if kind == "param" else []) + ["unit"] + (
        ["set"] if kind == "param" else [])
    widths = [max([len(h)] + [len(c[i]) for c, _ in rows]) for i, h in enumerate(heads)]
    if console.width >= max(WIDE_TUNABLES, sum(widths) + 2 * len(heads) + 30):
        t = _table(title, pad_edge=False)
        for i, head in enumerate(heads):
            t.add_column(head, no_wrap=True, min_width=widths[i],
                         justify="right" if head == "range" else "left")
        t.add_column("description", ratio=1)
        for cells, doc in rows:
            t.add_row(*cells, doc)
        console.print(t)
        return
    # The listing: the layer heads its group, so its column goes.
    keep = [i for i, h in enumerate(heads) if h != "layer"]

    def line(cells: Sequence[str]) -> str:
        parts = [cells[i].rjust(widths[i]) if heads[i] == "range" else cells[i].ljust(widths[i])
                 for i in keep]
        return "  " + "  ".join(parts).rstrip()

    console.print(f"[bold]{_escape(title)}[/bold]")
    console.print(line(heads), style="bold", markup=False, highlight=False)
    layer = None
    wrap = max(console.width - 7, 30)
    for cells, doc in rows:
        if cells[1] != layer:
            layer = cells[1]
            console.print(f"[underline]{_escape(layer)}[/underline]")
        console.print(line(cells), markup=False, highlight=False, soft_wrap=True)
        for part in textwrap.wrap(doc, wrap):
            console.print("      " + part, style="dim", markup=False, highlight=False,
                          soft_wrap=True)
    console.print()


def _natural_width(renderable: Any) -> int:
    """The width ``renderable`` takes when nothing limits it."""
    import io

    from rich.cells import cell_len
    from rich.console import Console

    out = io.StringIO()
    probe = Console(width=1000, file=out, no_color=True, highlight=False)
    probe.print(renderable)
    return max((cell_len(line.rstrip()) for line in out.getvalue().splitlines()), default=0)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from xlayer._extras import require
    from xlayer.sweeps import load_sweep

    require("sweep", "xlayer sweep")

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
    if args.batch_runs is not None and args.batch_runs < 1:
        raise _CommandError(f"--batch: must be at least 1, found {args.batch_runs}")
    if args.shared_folder and args.scheduler is None:
        raise _CommandError("--shared-folder: only with --scheduler (the local cluster's "
                            "workers always write the run folders themselves)")
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
                              no_workers_timeout_s=args.no_workers_timeout,
                              shared_folder=True if args.shared_folder else None,
                              batch_runs=args.batch_runs)
    if not args.quiet:
        console = _console()
        console.print(
            f"{headline(outcome)}: {outcome.skipped} already done, {outcome.ran} run now, "
            f"{outcome.failed} failed; written to [bold]{out}[/bold]"
        )
        for key, message in outcome.failures[:10]:
            console.print(f"  failed {key}: {_one_line(message)}")
        _print_sweep_table(console, out)
        if not args.no_oracle:
            _print_oracle_table(console, out)
    return outcome


@contextlib.contextmanager
def _dask_client_logs_silenced() -> Iterator[None]:
    """Dask's client logs a traceback when it loses its scheduler; the sweep reports that
    itself in one line, so the command keeps to its one-line errors.

    The client's own records below CRITICAL are dropped; so is any record of another
    ``distributed`` module at ERROR or above or carrying a traceback (``distributed.batched``
    logs "Batched Comm Closed" with one at INFO when the connection drops), at the handlers of
    the ``distributed`` logger, where its modules' records are printed. Dask's warnings stay."""
    import logging

    logger = logging.getLogger("distributed.client")

    def below_critical(record: logging.LogRecord) -> bool:
        return record.levelno >= logging.CRITICAL

    def no_tracebacks(record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR and not record.exc_info

    try:
        import distributed  # noqa: F401  (sets up its loggers' handlers, which the sweep would)
    except ImportError:
        pass
    handlers = list(logging.getLogger("distributed").handlers)
    logger.addFilter(below_critical)  # a filter, since Dask may set the logger's level itself
    for h in handlers:
        h.addFilter(no_tracebacks)
    try:
        yield
    finally:
        logger.removeFilter(below_critical)
        for h in handlers:
            h.removeFilter(no_tracebacks)


def _core_presets() -> List[str]:
    return list(_core.presets())


def compare_sweep(scenario: str, stacks: Sequence[str], seeds: Any,
                  overrides: Any = ()) -> Dict[str, Any]:
    """The sweep document ``xlayer compare`` runs: ``scenario`` under each stack preset;
    ``overrides`` are ``KEY=VALUE`` strings or a dict of field paths to values."""
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
        "overrides": dict(overrides) if isinstance(overrides, Mapping) else list(overrides),
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
    from xlayer._extras import require
    from xlayer.sweeps import load_sweep

    require("sweep", "xlayer compare")

    stacks = [s.strip() for s in args.stacks.split(",") if s.strip()]
    spec = load_sweep(compare_sweep(args.scenario, stacks, _parse_seeds(args.seeds),
                                    args.overrides))
    outcome = _run_sweep(
        spec, args,
        lambda o: f"{len(stacks)} stacks x {o.planned // max(len(stacks), 1)} seeds")
    if not args.quiet:
        print(f"plots, with the stacks as bars (metrics_by_stack): xlayer plot {args.out_folder}")
    return _failures_status(outcome, args)


#: The columns of the sweep summary: (metric, header). Units are the analysis module's.
SWEEP_TABLE = (("aggregate_throughput_bps", "aggregate"), ("jain_index", "Jain"),
               ("log_utility", "log utility"), ("starved_flows", "starved"),
               ("median_flow_throughput_bps", "median flow"))


def _print_sweep_table(console: "Console", folder: str) -> None:
    """The mean and 95 % confidence interval of the main metrics per stack and swept values
    (in the sweep's order). Each cell reads ``mean [low, high]`` when the table fits the
    console that way, else the mean over its interval ``low–high`` on a second line, so that it
    fits 80 columns."""
    from rich.text import Text

    from xlayer.analysis import display_unit, interval_parts, load, summarize

    sweep = load(folder, rebuild=False)
    metrics = [m for m, _ in SWEEP_TABLE]
    table = summarize(sweep, metrics)
    if table.empty:
        return
    keys = ["stack"] + sweep.swept
    units = {m: display_unit(m, sweep.ok[m] if m in sweep.ok else None) for m in metrics}
    rows = []
    for group, df in table.groupby(keys, sort=False, dropna=False):
        group = group if isinstance(group, tuple) else (group,)
        by_metric = df.set_index("metric")
        cells = [interval_parts(m, by_metric.loc[m, "mean"], by_metric.loc[m, "ci_low"],
                                by_metric.loc[m, "ci_high"], units[m]) for m in metrics]
        rows.append(([_fmt_value(v) for v in group], cells, int(by_metric["n"].max())))
    heads = [(h + (f" {units[m][0]}" if units[m][0] else "")) for m, h in SWEEP_TABLE]

    def one_line(cell: Any) -> str:
        mean, bounds = cell
        return f"{mean} [{bounds[0]}, {bounds[1]}]" if bounds else mean

    # One line per group when it fits: widths of the keys, the metric cells and "runs", with
    # two spaces between columns. Otherwise each cell is the mean over its interval, and every
    # column gets an exact width: the numbers' (headers wrap at their spaces), the keys' values
    # (their names fold, after their dots if there is room), one space between columns.
    key_values = [max(len(r[0][i]) for r in rows) for i in range(len(keys))]
    singles = [max([len(heads[j])] + [len(one_line(r[1][j])) for r in rows])
               for j in range(len(metrics))]
    single = (sum(max(len(k), w) for k, w in zip(keys, key_values)) + sum(singles) + 4
              + 2 * (len(keys) + len(metrics))) <= console.width
    title = ("mean ± 95 % confidence interval over seeds, as mean [low, high]" if single
             else "mean ± 95 % confidence interval over seeds (interval below the mean)")
    # the title on a line of its own, so that a narrow table does not wrap it
    console.print(title, markup=False, highlight=False, style="italic")
    if single:
        t = _table(None, pad_edge=False, collapse_padding=True)
        for k in keys:
            t.add_column(_escape(k), no_wrap=True)
        for head in heads:
            t.add_column(head, justify="right", no_wrap=True)
        t.add_column("runs", justify="right", no_wrap=True)
    else:
        numbers, whole = [], []
        for j, head in enumerate(heads):
            cells = [r[1][j] for r in rows]
            width = max([len(c[0]) for c in cells] + [len(c[1][0]) + len(c[1][1]) + 1
                                                       for c in cells if c[1]])
            numbers.append(max([width] + [len(word) for word in head.split()]))
            whole.append(max(width, len(head)))
        if sum(whole) + sum(max(len(k), w) for k, w in zip(keys, key_values)) + 4 + len(
                keys) + len(whole) <= console.width:
            numbers = whole  # room for every header on one line
        room = console.width - sum(numbers) - 4 - (len(keys) + len(numbers))
        key_heads = [k.replace(".", ".\n") for k in keys]
        wanted = [max([w] + [len(part) for part in h.split("\n")])
                  for w, h in zip(key_values, key_heads)]
        widths = wanted if sum(wanted) <= room else [max(w, 5) for w in key_values]
        t = _table(None, pad_edge=False, collapse_padding=True, show_edge=False,
                   padding=(0, 0))
        for head, width in zip(key_heads, widths):
            t.add_column(_escape(head), overflow="fold", width=width)
        for head, width in zip(heads, numbers):
            t.add_column(head, justify="right", width=width)
        t.add_column("runs", justify="right", width=4)
    for group_cells, cells, n in rows:
        shown = []
        for cell in cells:
            if single:
                shown.append(Text(one_line(cell)))
            else:
                text = Text(cell[0])
                if cell[1]:
                    text.append(f"\n{cell[1][0]}–{cell[1][1]}", style="dim")
                shown.append(text)
        t.add_row(*(Text(c) for c in group_cells), *shown, _fmt_value(n),
                  end_section=not single)
    console.print(t)


def _cmd_plot(args: argparse.Namespace) -> int:
    from xlayer.plots import check_formats, plot_folder

    formats = check_formats(args.format.split(","))  # before anything is loaded
    show_progress = not args.quiet and sys.stderr.isatty()
    files = plot_folder(args.folder, args.out, formats=formats, dpi=args.dpi, style=args.style,
                        progress=show_progress, oracle=True if args.oracle else None)
    if not args.quiet:
        for f in files:
            print(f)
    return 0


def _cmd_view(args: argparse.Namespace) -> int:
    from xlayer.viewer import MAX_FRAMES, view_with_check

    if not 1 <= args.frames <= MAX_FRAMES:
        raise _CommandError(f"--frames: from 1 to {MAX_FRAMES}, found {args.frames}")
    if args.source is not None and not Path(args.source).exists():
        raise _CommandError(f"{args.source}: no such result folder or scenario file")
    show_progress = not args.quiet and sys.stderr.isatty()
    try:
        path, check = view_with_check(args.source, args.out, frames=args.frames, seed=args.seed,
                                      overrides=args.overrides,
                                      allow_python=args.allow_python, progress=show_progress)
    except IsADirectoryError as e:
        raise _CommandError(f"--out {args.out}: is a folder; name the HTML file") from e
    if check is not None and not check[0]:
        print(f"xlayer: warning: {check[1]}", file=sys.stderr)
    if not args.quiet:
        print(path)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from xlayer.report import write_report

    print(write_report(args.folder, args.out, style=args.style,
                       progress=sys.stderr.isatty()))
    return 0


# ----------------------------------------------------------------------------------------------
# Output


def _table(title: Optional[str], **options: Any) -> Any:
    """A rich table in the house style (imported here: rich is not needed for --help)."""
    from rich import box
    from rich.table import Table

    options.setdefault("box", box.SIMPLE_HEAD)
    return Table(title=title, **options)


def _console() -> "Console":
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        # Piped or captured: no colour, and wide enough that the flow table is not squeezed
        # (or as wide as $COLUMNS says).
        try:
            width = int(os.environ.get("COLUMNS", ""))
        except ValueError:
            width = 120
        console = Console(width=width if width > 0 else 120, no_color=True, highlight=False)
    return console


def _print_summary(console: "Console", result: "Result") -> None:
    from xlayer._fields import format_value  # not xlayer.analysis: that imports pandas

    s = result.summary
    t = _table(f"xlayer — {s.get('name', '')}", show_header=False)
    t.add_column("what")
    t.add_column("value", justify="right")
    wall = s.get("wall_s")
    events = s.get("events")
    rows = [
        ("seed", _fmt_value(s.get("seed"))),
        ("nodes / flows", f"{_fmt_value(s.get('nodes'))} / {_fmt_value(s.get('flows'))}"),
        ("simulated time", format_value("sim_time_s", s.get("sim_time_s"))),
        ("aggregate throughput", format_value("aggregate_throughput_bps",
                                              s.get("aggregate_throughput_bps"))),
        ("Jain's fairness index", format_value("jain_index", s.get("jain_index"))),
        ("log utility", format_value("log_utility", s.get("log_utility"))),
        ("starved flows", _fmt_value(s.get("starved_flows"))),
        ("delivery ratio", format_value("delivery_ratio", s.get("delivery_ratio"))),
        ("mean delay", format_value("delay_mean_s", s.get("delay_mean_s"))),
        ("events", _fmt_value(events)),
        ("wall time", format_value("wall_s", wall)),
    ]
    if isinstance(events, (int, float)) and isinstance(wall, (int, float)) and wall > 0:
        rows.append(("events per second", f"{events / wall:,.0f}"))
    for what, value in rows:
        t.add_row(what, value)
    console.print(t)
    _print_flows(console, result)


#: The flow table of ``xlayer run``: (column, header); units are the analysis module's.
FLOW_TABLE = (("flow", "flow"), ("src", "src→dst"), ("hops", "hops"), ("sent", "sent"),
              ("received", "recv"), ("throughput_bps", "kbit/s"), ("delivery_ratio", "deliv"),
              ("delay_mean_s", "delay"), ("delay_median_s", "p50"), ("delay_p95_s", "p95"))


def _print_flows(console: "Console", result: "Result") -> None:
    from xlayer._fields import display_unit, format_value

    # Rows read without making the table a DataFrame: a run printed here needs no pandas.
    n_flows = result._table_length("flows")
    if not n_flows:
        console.print("no flows")
        return
    t = _table(
        "flows (throughput in kbit/s, delays in ms)", pad_edge=False,
        collapse_padding=True, show_edge=False,
    )
    for _, title in FLOW_TABLE:
        t.add_column(title, justify="right", no_wrap=True)
    for row in result._table_rows("flows", MAX_FLOW_ROWS):
        cells = []
        for col, _ in FLOW_TABLE:
            if col == "src":
                cells.append(f"{_fmt_value(row.get('src'))}→{_fmt_value(row.get('dst'))}")
            else:
                cells.append(format_value(col, row.get(col), display_unit(col),
                                          with_unit=False))
        t.add_row(*cells)
    console.print(t)
    if n_flows > MAX_FLOW_ROWS:
        console.print(f"… and {n_flows - MAX_FLOW_ROWS} more flows (write them with --out)")


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


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
        if math.isinf(value) or abs(value) >= 1.7e308:
            return "∞" if value > 0 else "−∞"
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        return repr(value)  # the shortest text that reads back as this number: 0.5, 1e-05
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
