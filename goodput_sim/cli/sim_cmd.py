"""`goodput-sim run | compare | demo | policies | validate | sweep`: the simulator's main jobs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import click

from goodput_sim import jsonio
from goodput_sim.api import (
    DEFAULT_POLICIES,
    Comparison,
    as_cluster,
    bundled_workload,
    checked_output_path,
    compare,
    declared_params,
    default_profiles_path,
    failure_free,
    has_failures,
    input_hashes,
    parse_policies,
    run,
    staged_folder,
    writable_folder,
    write_run,
)
from goodput_sim.cli import main, profiles_option, writing
from goodput_sim.cli.numbers import Float, Int
from goodput_sim.errors import InputError
from goodput_sim.params import parse_assignments
from goodput_sim.plugins import did_you_mean
from goodput_sim.results.compare_table import table_lines
from goodput_sim.results.metrics import run_summary
from goodput_sim.results.report import statistic_text
from goodput_sim.results.saved import MAX_SEED, is_seed
from goodput_sim.sim.budget import DEFAULT_MAX_RUNS, MAX_GRID_RUNS
from goodput_sim.spec import BY_NAME, SETTINGS, Setting, SimConfig, build_config, with_settings
from goodput_sim.usertext import parse_float, parse_int

_policies_option = click.option(
    "--policies",
    default=",".join(DEFAULT_POLICIES),
    show_default=True,
    help="Comma-separated policy names.",
)
_cluster_option = click.option(
    "--cluster",
    default="16x4",
    show_default=True,
    help="NODESxGPUS or a cluster YAML file (see configs/).",
)
_agent_option = click.option(
    "--agent",
    default=None,
    help="Batch agent for every job (default: the policy's own; see `goodput-sim policies`).",
)
_param_option = click.option(
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE",
    help="Policy or agent parameter (repeatable; see `goodput-sim policies`).",
)


def _setting_option(setting: Setting):
    """The CLI option of a declared engine setting (a flag for a boolean)."""
    if setting.kind is bool:  # on by default: --name/--no-name
        flag = f"{setting.flag}/--no-{setting.flag[2:]}" if setting.default else setting.flag
        return click.option(flag, is_flag=True, default=setting.default, help=setting.help)
    if setting.choices:
        kind = click.Choice(list(setting.choices))
    elif setting.kind is Path:
        kind = click.Path(path_type=Path)
    elif setting.words:
        kind = str  # a number or one of its words, converted with the setting's checks
    else:
        kind = {int: Int(), float: Float()}.get(setting.kind, setting.kind)
    return click.option(
        setting.flag,
        type=kind,
        default=setting.default,
        show_default=setting.default is not None,
        help=setting.help,
    )


_setting_options = [_setting_option(s) for s in SETTINGS if s.option]


def _load_config(ctx: click.Context, _param, path: Path | None) -> Path | None:
    """``--config FILE``: a YAML mapping of this command's options by their own names (as on
    the command line, without dashes, ``_`` for ``-``: ``policy: goodput``, ``restart_delay:
    30``, ``quiet: true``, ``format: json``, ``param: {p: -1}``, or ``params``) that become its
    defaults; options given on the command line win."""
    if path is None:
        return None
    from goodput_sim.inputs.safe_yaml import load_yaml

    data = load_yaml(path)
    if not isinstance(data, dict):
        raise InputError(path, "expected a mapping of option names to values")
    options = config_keys(ctx.command)
    values: dict[str, object] = {}
    given: dict[str, object] = {}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        option = options.get(name)
        if option is None:
            names = sorted(k for k, o in options.items() if o is not None)
            hint = did_you_mean(name, names)
            raise InputError(path, f"unknown option {key!r}{hint}; known: {', '.join(names)}")
        if option.name in given and option.name not in ("params",):
            raise InputError(
                path,
                f"sets {option.name} a second time (also as {given[option.name]!r})",
                f"key {key}",
            )
        given[option.name] = key
        if name == "autoscaler_params":
            if not isinstance(value, dict):
                raise InputError(path, f"expected a mapping, found {value!r}", f"key {key}")
            value = _scaler_items(value)
        converted = _config_value(path, key, option, value)
        if option.name == "params":
            converted = [*values.get("params", ()), *converted]
        values[option.name] = converted
    ctx.default_map = {**(ctx.default_map or {}), **values}
    return path


def config_keys(command: click.Command) -> dict[str, click.Option]:
    """The keys a ``--config`` file of ``command`` may hold, each to its option: every option's
    own names (its long flags without dashes, ``_`` for ``-``), its parameter's name where
    that differs (``params``), and ``autoscaler_params`` (``--param autoscaler.KEY=VALUE``)."""
    keys: dict[str, click.Option] = {}
    for option in command.params:
        if not isinstance(option, click.Option) or option.name in ("config", "manifest", "help"):
            continue
        for flag in option.opts:
            if flag.startswith("--"):
                keys[flag[2:].replace("-", "_")] = option
        if option.name == "params":
            keys.setdefault(option.name, option)
    if "params" in keys:
        keys["autoscaler_params"] = keys["params"]
    return keys


def _config_value(path: Path, key: object, option: click.Option, value: object) -> object:
    """A ``--config`` value checked as its option would be: a declared setting by its
    declaration (so ``seed: 1.5`` or ``oracle: 5`` is refused, not rounded or crashed on), a
    seed as a seed, a flag as true or false, a number as a number (``1_0`` is no number),
    ``param`` as a mapping or a list of ``KEY=VALUE``, any other option as text (``workload:
    5`` names a file 5, not descriptor 5)."""
    where = f"key {key}"
    name = option.name
    if name in BY_NAME:
        try:
            BY_NAME[name].convert(value)
        except InputError as error:
            raise InputError(path, error.problem, where) from None
        return value
    if name == "seed":
        if not is_seed(value):
            raise InputError(
                path, f"expected an integer in [0, {MAX_SEED}], found {value!r}", where
            )
        return value
    if option.multiple:
        if isinstance(value, dict):
            return [f"{k}={v}" for k, v in value.items()]
        items = value if isinstance(value, list) else [value]
        if not all(isinstance(v, str) and v.strip() for v in items):
            raise InputError(path, f"expected a mapping or a list of text, found {value!r}", where)
        return items
    if option.is_flag and option.is_bool_flag:
        if not isinstance(value, bool):
            raise InputError(path, f"expected true or false, found {value!r}", where)
        return value
    if isinstance(option.type, click.types.IntParamType | click.types.FloatParamType):
        parse = parse_int if isinstance(option.type, click.types.IntParamType) else parse_float
        try:
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise ValueError
            if isinstance(value, str):
                parse(value)
        except ValueError:
            raise InputError(path, f"expected a number, found {value!r}", where) from None
        return str(value)  # converted by the option's type, as on the command line
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InputError(path, f"expected text, found {value!r}", where)
    return str(value)  # converted by the option's type, as on the command line


def _scaler_items(values: dict) -> list[str]:
    """A ``--config`` file's ``autoscaler_params`` mapping as ``--param autoscaler.KEY=VALUE``."""
    return [f"autoscaler.{k}={v}" for k, v in values.items()]


_config_option = click.option(
    "--config",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    is_eager=True,
    expose_value=False,
    callback=_load_config,
    help="YAML file of this command's options (the command line overrides it).",
)


def _common(func):
    """Options shared by run and compare."""
    options = [
        _config_option,
        click.option(
            "--workload",
            type=click.Path(path_type=Path),
            default=None,
            help="Workload CSV (default: the bundled traces/workloads/default.csv).",
        ),
        profiles_option,
        _cluster_option,
        click.option(
            "--seed",
            type=Int(0, MAX_SEED),
            default=0,
            show_default=True,
            help="Seed for randomised policies.",
        ),
        _agent_option,
        _param_option,
        *_setting_options,
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _split_options(options: dict) -> tuple[dict, SimConfig]:
    """Separate the engine settings of ``_common`` from the input options (``params`` parsed
    from its ``KEY=VALUE`` items, ``autoscaler.KEY`` ones going to the autoscaling rule)."""
    params = parse_assignments(options["params"])
    values = {s.name: options.pop(s.name) for s in SETTINGS if s.option}
    values["autoscaler_params"] = {
        k.split(".", 1)[1]: v for k, v in params.items() if k.startswith("autoscaler.")
    }
    options["params"] = {k: v for k, v in params.items() if not k.startswith("autoscaler.")}
    nodes = None
    if values["failure_trace"] is not None and values["max_nodes"] is None:
        nodes = as_cluster(options["cluster"]).nodes  # a trace names nodes of this cluster
    return options, build_config(values, options["seed"], nodes)


def _inputs(workload: Path, profiles: Path | None) -> dict[str, Path]:
    """The input files a results folder's manifest names and hashes, as absolute paths (a
    manifest's relative path means "beside the manifest", so one typed relative to here would
    not be found by ``run --manifest``)."""
    return {
        "workload": Path(workload).resolve(),
        "profiles": default_profiles_path(profiles).resolve(),
    }


_force_option = click.option(
    "--force", is_flag=True, help="Replace the results already in --out (never done silently)."
)
_quiet_option = click.option(
    "--quiet", is_flag=True, help="No progress bar (one is shown only on a terminal anyway)."
)


@main.command("run")
@click.option("--policy", default=None, help="Policy name (see `goodput-sim policies`).")
@click.option(
    "--manifest",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Replay the run of this manifest.json instead (same inputs, settings and seed).",
)
@_common
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Results folder (default: results/<policy>-<workload>-<hash of the run's settings>, "
    "numbered if taken).",
)
@_force_option
@_quiet_option
@click.option(
    "--plot/--no-plot",
    default=False,
    show_default=True,
    help="Also draw the JCT CDF (jct_cdf.png); plotting loads matplotlib, about a second of "
    "CPU, more than a short run itself (`goodput-sim plot` draws it later).",
)
def run_cmd(
    policy: str | None,
    manifest: Path | None,
    out: Path | None,
    force: bool,
    quiet: bool,
    plot: bool,
    **options,
) -> None:
    """Replay a workload under one policy and write a results folder (or replay a saved run
    from its manifest: its jobs.csv is reproduced byte for byte)."""
    if manifest is not None:
        context = click.get_current_context()
        given = [
            name
            for name in ("policy", *options)
            if context.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
        ]
        if given:
            raise InputError(f"--{given[0].replace('_', '-')}", "cannot be set with --manifest")
        from goodput_sim.results.replay import replay_arguments

        arguments = replay_arguments(manifest, declared_params)
        policy, workload, profiles = (arguments[k] for k in ("policy", "workload", "profiles"))
        seed, config, cluster = arguments["seed"], arguments["config"], arguments["cluster"]
        agent, params = arguments["agent"], arguments["params"]
    elif policy is None:
        raise InputError("--policy", "is required (or replay a run with --manifest)")
    else:
        inputs, config = _split_options(options)
        workload = inputs["workload"] or bundled_workload()
        profiles, seed, cluster = inputs["profiles"], inputs["seed"], inputs["cluster"]
        agent, params = inputs["agent"], inputs["params"]
    identity = (policy, agent, params, seed, config, cluster, profiles)
    out = writable_folder(out or default_folder(policy, workload, identity), force=force)
    result = run(policy, workload, profiles, cluster, seed, config, agent, params, not quiet)
    summary = run_summary(result)
    spec = as_cluster(cluster, config)
    if has_failures(config, spec) or "crashes" in result.jobs:  # profiles' own crashes too
        plain_config, plain_cluster = failure_free(config, spec)
        twin = run(policy, workload, profiles, plain_cluster, seed, plain_config, agent, params)
        summary["avg_jct_without_failures"] = run_summary(twin)["avg_jct"]
    with staged_folder(out) as folder:
        write_run(
            result,
            folder,
            _inputs(workload, profiles),
            seed,
            params=params,
            summary=summary,
            figure=plot,
        )
    if result.stopped:
        click.echo(
            f"{policy}: stopped early ({result.stopped}); partial results in {out}", err=True
        )
        raise SystemExit(3)
    jobs = result.jobs
    done = jobs[jobs["finished"]]
    over = "" if len(done) == len(jobs) else f" (over the {len(done)} finished)"
    average = f"{done['jct'].mean():.1f} s" if len(done) else "-"
    click.echo(
        f"{policy}: {len(done)}/{len(jobs)} jobs finished, average JCT {average}{over}, "
        f"wall {result.wall_seconds:.1f} s -> {out}"
    )
    if "ftf_rho_max" in summary:
        click.echo(f"  finish-time fairness: {_fairness_text(summary)} ({FAIRNESS_NOTE})")
    if "avg_jct_without_failures" in summary:
        click.echo(
            f"  {summary['node_failures']} node failures, {summary['node_hours_failed']:.1f} "
            f"node-h down, {summary['lost_gpu_hours']:.1f} GPU-h of work lost; average JCT "
            f"{summary['avg_jct_without_failures']:.1f} s without failures"
        )
    if "node_hours_spot" in summary:
        click.echo(
            f"  {summary['node_preemptions']} spot reclaims; node-hours on demand "
            f"{summary['node_hours_on_demand']:.1f}, spot {summary['node_hours_spot']:.1f}; "
            f"cost {summary['cost']:.2f}"
        )
    if config.autoscale is not None:
        cost = summary["cost"]
        priced = f", cost {cost:.2f}" if cost == cost else ""
        click.echo(f"  {summary['node_hours']:.1f} node-hours provisioned{priced}")


FAIRNESS_NOTE = "rho: JCT over the JCT alone on an equal share of the cluster"


def _fairness_text(summary) -> str:
    """Worst and median rho and the share of jobs above 1, in words (``-`` for a statistic
    with no finished job to measure)."""
    return (
        f"worst rho {statistic_text(summary['ftf_rho_max'], '.2f')}, "
        f"median {statistic_text(summary['ftf_rho_median'], '.2f')}, "
        f"{statistic_text(summary['ftf_unfair_fraction'], '.0%')} of jobs above 1"
    )


def print_comparison(comparison: Comparison) -> None:
    """The comparison table (with cost, and failures when nodes failed) and the claim check,
    as plain text."""
    s = comparison.summary
    autoscaled = any(r.config.get("autoscale") is not None for r in comparison.results.values())
    wide = max([11, *(len(str(name)) for name in s.index)])  # plugins' names may be longer
    for line in table_lines(s, autoscaled, name_width=wide):
        click.echo(line)
    typed = [c for c in s.columns if c.startswith("gpu_hours_") and c != "gpu_hours_per_job"]
    if typed:
        click.echo("\nGPU-hours by GPU type, moves between types")
        for name, row in s.iterrows():
            parts = "  ".join(f"{c[len('gpu_hours_') :]} {row[c]:.1f}" for c in typed)
            click.echo(f"{name:<{wide}} {parts}  moves {int(row.type_moves)}")
    if "ftf_rho_max" in s:
        click.echo(f"\nfinish-time fairness ({FAIRNESS_NOTE})")
        for name, row in s.iterrows():
            click.echo(f"{name:<{wide}} {_fairness_text(row)}")
    claim = comparison.claim
    if not claim.get("available"):
        click.echo("claim check: needs the goodput policy in the comparison")
        return
    if not claim["versus"]:
        click.echo("claim check: no baseline in the comparison to set goodput against")
        return
    low, high = claim["paper_range"]
    click.echo(
        f"\nclaim check: goodput's average-JCT reduction vs each policy "
        f"(Pollux paper: {low:.0%}-{high:.0%})"
    )
    for name, v in claim["versus"].items():
        verdict = (
            "within" if v["within_paper_range"] else ("above" if v["reduction"] > high else "below")
        )
        click.echo(f"  vs {name:<{wide}} {v['reduction']:>7.1%}   ({verdict} the paper's range)")


def write_comparison(
    comparison: Comparison, out: Path, inputs: dict, seed: int, params: dict | None = None
) -> None:
    """Each policy's results folder (inputs hashed once), the summary and the two charts."""
    out.mkdir(parents=True, exist_ok=True)
    hashes = input_hashes(inputs)
    summaries = comparison.summary.to_dict(orient="index")
    for name, result in comparison.results.items():
        summary = {k: v for k, v in summaries[name].items() if k != "wall_seconds"}
        write_run(result, out / name, inputs, seed, hashes=hashes, summary=summary, params=params)
    (out / "summary.json").write_text(jsonio.dumps(comparison.as_json()) + "\n")
    comparison.summary.rename_axis("policy").to_csv(out / "summary.csv", float_format="%.6f")
    from goodput_sim.results.plots import interval_bars, jct_cdf
    from goodput_sim.results.report import load_results, policy_table

    saved = load_results(out)
    caption = saved.caption()
    jobs = {name: r.jobs for name, r in comparison.results.items()}
    jct_cdf(jobs, out / "jct_cdf.png", caption)
    interval_bars(policy_table(saved), out / "avg_jct.png", caption)


def _compare_and_report(
    names: list[str] | tuple[str, ...],
    out: Path,
    workers: int,
    config: SimConfig | None = None,
    fmt: str = "table",
    *,
    workload: Path | None = None,
    profiles: Path | None = None,
    cluster: str = "16x4",
    seed: int = 0,
    agent: str | None = None,
    params: dict | None = None,
    force: bool = False,
    quiet: bool = False,
    report: bool = False,
) -> None:
    """Run ``compare``, write its results folder ``out`` (with ``report``, its HTML report
    ``report.html`` too) and print the table (or JSON)."""
    workload = workload or bundled_workload()
    writable_folder(out, force=force)
    comparison = compare(
        names, workload, profiles, cluster, seed, config, workers, agent, params, not quiet
    )
    with staged_folder(out) as folder:
        write_comparison(comparison, folder, _inputs(workload, profiles), seed, params)
        if report:  # in the staged folder, so that the results and their report come together
            _write_report(folder, out.name, quiet)
    stopped = {n: r.stopped for n, r in comparison.results.items() if r.stopped}
    if stopped:  # no table or claim from runs a guard cut short
        name, why = next(iter(stopped.items()))
        report_too = f" (HTML report: {out / REPORT_NAME})" if report else ""
        click.echo(
            f"stopped early: {', '.join(stopped)} ({name}: {why}); partial results in "
            f"{out}{report_too}, no claim check on them",
            err=True,
        )
        raise SystemExit(3)
    if fmt == "json":
        click.echo(jsonio.dumps(comparison.as_json()))
    else:
        print_comparison(comparison)
        click.echo(f"\nresults, JCT CDF and average-JCT chart: {out}")
    if report:
        click.echo(f"HTML report: {out / REPORT_NAME}")


REPORT_NAME = "report.html"


def _write_report(folder: Path, name: str, quiet: bool) -> None:
    """The HTML report of the comparison in ``folder`` (results named ``name``), in it."""
    from goodput_sim.api import baselines
    from goodput_sim.results.html_report import write_html
    from goodput_sim.results.report import load_results

    if not quiet:
        click.echo("drawing the HTML report ...", err=True)  # seconds, not silence
    path = folder / REPORT_NAME
    with writing(path, "--out"):
        write_html(load_results(folder), path, baselines, name=name)


@main.command("compare")
@_policies_option
@_common
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Results folder (default: results/compare-<workload>-<hash of the settings>, "
    "numbered if taken).",
)
@click.option(
    "--workers",
    type=Int(1, 64),
    default=1,
    show_default=True,
    help="Processes to run policies in.",
)
@_force_option
@_quiet_option
def compare_cmd(
    policies: str, fmt: str, out: Path | None, workers: int, force: bool, quiet: bool, **options
) -> None:
    """Run several policies on the same inputs; print JCT statistics and the claim check."""
    inputs, config = _split_options(options)
    workload = inputs["workload"] or bundled_workload()
    out = out or default_folder("compare", workload, (policies, options))
    _compare_and_report(
        parse_policies(policies), out, workers, config, fmt, **inputs, force=force, quiet=quiet
    )


@main.command("demo")
@click.option(
    "--out", type=click.Path(path_type=Path), default=Path("results/demo"), show_default=True
)
@click.option("--workers", type=Int(1, 64), default=2, show_default=True)
@_quiet_option
def demo_cmd(out: Path, workers: int, quiet: bool) -> None:
    """The main job: all five policies on the bundled default workload, 16x4 cluster, and the
    HTML report of the results (it replaces its own results folder)."""
    click.echo(
        f"Comparing {', '.join(DEFAULT_POLICIES)} on {bundled_workload().name} "
        "(160 jobs, 16 nodes x 4 GPUs, bundled profiles)...\n"
    )
    _compare_and_report(DEFAULT_POLICIES, out, workers, force=True, quiet=quiet, report=True)


@main.command("policies")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def policies_cmd(fmt: str) -> None:
    """List the registered policies, batch agents, autoscalers and dynamics, built in or
    installed by plugins: aliases, default agent, parameters."""
    from goodput_sim.cli.catalog import catalog, catalog_text

    if fmt == "json":
        click.echo(json.dumps(catalog(), indent=2, sort_keys=True))
    else:
        click.echo(catalog_text())


@main.command("validate")
@click.option(
    "--reference",
    type=click.Path(path_type=Path),
    required=True,
    help="The Pollux artifact folder (traces/ and workloads/).",
)
@click.option(
    "--sia-reference",
    type=click.Path(path_type=Path),
    default=None,
    help="The Sia artifact folder, for the heterogeneous checks (skipped when absent).",
)
def validate_cmd(reference: Path, sia_reference: Path | None) -> None:
    """Fidelity checks: workload-6 average JCTs against the Pollux artifact's results, and
    the heterogeneous checks on the Sia artifact's Philly workloads."""
    from goodput_sim.experiments.validate import (
        WORKLOAD,
        check_fidelity,
        check_heterogeneous,
        check_job_level,
    )

    failed = 0
    if sia_reference is not None and (sia_reference / "workloads" / "philly").is_dir():
        for check in check_heterogeneous(sia_reference):
            click.echo(f"{'PASS' if check.passed else 'FAIL'}  {check.name}: {check.detail}")
            failed += not check.passed
        for bar, result in check_job_level(sia_reference):
            name = f"{bar.policy} on philly {bar.workload}, job by job"
            if result is None:
                click.echo(f"SKIP  {name}: needs sia's CBC solver (pip install 'goodput-sim[cbc]')")
                continue
            click.echo(f"{'PASS' if result.passed else 'FAIL'}  {name}: {result.detail}")
            failed += not result.passed
    elif sia_reference is not None:
        click.echo(f"validate: heterogeneous checks SKIPPED - no Sia data at {sia_reference}")

    if not (reference / WORKLOAD).is_file() or not (reference / "traces").is_dir():
        click.echo(
            f"validate: SKIPPED - reference data not found at {reference} "
            "(needs traces/ and workloads/workload-6.csv)"
        )
        raise SystemExit(1 if failed else 0)
    for r in check_fidelity(reference):
        status = "PASS" if r.passed else "FAIL"
        failed += not r.passed
        click.echo(
            f"{status}  {r.bar.policy:<9} avg JCT {r.avg_jct:8.1f} s  ({r.bar.note}; "
            f"wall {r.wall_seconds:.1f} s)"
        )
    if failed:
        raise SystemExit(1)


@main.command("sweep")
@click.argument("experiment", required=False, type=click.Path(path_type=Path))
@click.option(
    "--policies",
    default=None,
    help=f"Comma-separated policy names [default: {','.join(DEFAULT_POLICIES)}].",
)
@click.option(
    "--workloads",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Workload CSVs or folders of them (repeatable; instead of an EXPERIMENT file).",
)
@click.option("--seeds", default="0", show_default=True, help="Comma-separated seeds.")
@profiles_option
@_cluster_option
@_agent_option
@_param_option
@click.option("--workers", type=Int(1, 64), default=2, show_default=True, help="Local processes.")
@click.option(
    "--scheduler",
    default=None,
    help="Run on Dask: 'local' starts a cluster of --workers processes here, or give the "
    "address of a running scheduler.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Results folder (default: results/<experiment name>, or results/sweep).",
)
@click.option(
    "--progress",
    "progress_model",
    type=click.Choice(["noise", "lr-aware"]),
    default=None,
    help="Progress model of every run [default: noise, or the experiment file's].",
)
@click.option(
    "--max-runs",
    type=Int(1, MAX_GRID_RUNS),
    default=DEFAULT_MAX_RUNS,
    show_default=True,
    help="Refuse a grid of more runs than this before any starts (a budget: raise it for a "
    "big sweep).",
)
@_quiet_option
def sweep_cmd(
    experiment,
    policies,
    workloads,
    seeds,
    profiles,
    cluster,
    agent,
    params,
    workers,
    scheduler,
    out,
    progress_model,
    max_runs,
    quiet,
) -> None:
    """Run a resumable grid of runs: an EXPERIMENT file (policies x workloads x loads x seeds x
    clusters x intervals; see configs/), or --policies x --workloads x --seeds. Finished runs
    in --out are kept, so an interrupted sweep picks up where it stopped."""
    from goodput_sim.experiments.sweep import run_grid, sweep, sweep_table

    if experiment is not None:
        from goodput_sim.experiments.grid import load_experiment

        if workloads or policies or agent or params:
            raise InputError(
                None, "an EXPERIMENT file names its own policies and workloads", "--workloads"
            )
        spec = load_experiment(experiment)
        config = spec.config
        if progress_model is not None:
            own = [k for v in spec.variants or () for k, _ in v.settings]
            if "progress" in (spec.settings or {}) or "progress" in own:
                raise InputError("--progress", f"{experiment} sweeps progress in its settings")
            config = with_settings(config, {"progress": progress_model})
        out = _sweep_folder(out or Path("results") / spec.name)
        table = run_grid(
            spec.policies,
            spec.workloads,
            out,
            seeds=spec.seeds,
            loads=spec.loads,
            clusters=spec.clusters,
            intervals=spec.intervals,
            profiles=spec.profiles,
            config=config,
            settings=spec.settings,
            workers=workers,
            scheduler=scheduler,
            progress=not quiet,
            variants=spec.variants,
            max_runs=max_runs,
        )
    else:
        files = []
        for path in workloads:
            files += sorted(path.glob("*.csv")) if path.is_dir() else [path]
        if not files:
            raise InputError("--workloads", "no workload CSV found (or give an EXPERIMENT file)")
        try:
            seed_list = [parse_int(s) for s in seeds.split(",") if s.strip()]
        except ValueError:
            raise click.BadParameter(
                f"expected comma-separated integers, got {seeds!r}", param_hint="--seeds"
            ) from None
        if not seed_list:
            raise InputError("--seeds", "names no seed")
        bad = next((s for s in seed_list if not is_seed(s)), None)
        if bad is not None:
            raise InputError("--seeds", f"expected integers in [0, {MAX_SEED}], found {bad}")
        names = parse_policies(",".join(DEFAULT_POLICIES) if policies is None else policies)
        resolved = [str(f.resolve()) for f in files]
        for option, values in (
            ("--policies", names),
            ("--seeds", seed_list),
            ("--workloads", resolved),
        ):
            repeated = next((v for k, v in enumerate(values) if v in values[:k]), None)
            if repeated is not None:
                raise InputError(option, f"lists {Path(str(repeated)).name} twice")
        out = _sweep_folder(out or Path("results/sweep"))
        table = sweep(
            names,
            files,
            out,
            seed_list,
            profiles,
            cluster,
            workers=workers,
            scheduler=scheduler,
            config=build_config({"progress": progress_model or "noise"}),
            agent=agent,
            params=parse_assignments(params),
            progress=not quiet,
            max_runs=max_runs,
        )
    pivot = sweep_table(table)
    click.echo("average JCT (hours; mean over seeds)")
    click.echo(pivot.round(2).to_string())
    click.echo(
        f"\n{len(table)} runs -> {out / 'summary.csv'}; statistics: goodput-sim report {out}"
    )
    stopped = table["stopped"].notna().sum() if "stopped" in table else 0
    if stopped:
        click.echo(
            f"{stopped} of {len(table)} runs stopped early (marked in summary.csv's stopped "
            "column); the same command again redoes them",
            err=True,
        )
        raise SystemExit(3)


def default_folder(kind: str, workload: str | Path, identity: object) -> Path:
    """``results/<kind>-<workload>-<hash>``: the hash names everything the results depend on
    (``identity``), so a different run never meets a folder it may not write. A folder taken
    by an earlier run of the same identity gets a number (``-2``, ``-3``...) instead."""
    from goodput_sim.experiments.sweep import bounded_name

    text = json.dumps(identity, sort_keys=True, default=repr)
    head = bounded_name(f"{kind}-{Path(workload).stem}", 220)  # room for -2 and .replaced
    base = Path("results") / f"{head}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"
    candidate, number = base, 1
    while candidate.exists() and any(candidate.iterdir()):
        number += 1
        candidate = base.with_name(f"{base.name}-{number}")
    return candidate


def _sweep_folder(out: Path) -> Path:
    """``out``, if it is new, empty, or an earlier sweep's folder (which is resumed)."""
    out = checked_output_path(out, "--out")
    if (out / "sweep.json").is_file():
        return out
    if (out / "summary.csv").is_file() and any(out.glob("*/manifest.json")):
        raise InputError("--out", f"{out} holds a comparison, not a sweep; choose another folder")
    if (out / "summary.csv").is_file():  # a sweep written before sweep.json existed
        return out
    return writable_folder(out)
