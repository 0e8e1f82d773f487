"""One function call per run: ``run`` a policy, or ``compare`` several on the same inputs.

Both return pandas DataFrames (inside a :class:`~goodput_sim.sim.result.SimResult` or
:class:`Comparison`) and are what the CLI calls.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from goodput_sim import jsonio
from goodput_sim.agents import BatchAgent, agent_class
from goodput_sim.autoscale import pool_cluster
from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec, check_gpu_types, parse_cluster
from goodput_sim.inputs.failures import FailureModel
from goodput_sim.inputs.workload import bundled_workload, check_workload, load_workload
from goodput_sim.kernel_cache import warm_for
from goodput_sim.policies import Policy, policy_class
from goodput_sim.profiles import bundled_profiles_path, load_profiles
from goodput_sim.results.metrics import claim_check, run_summary
from goodput_sim.results.saved import check_seed, file_hash, recorded_inputs
from goodput_sim.sim.dynamics import DynamicFactory, as_factories
from goodput_sim.sim.dynamics.checkpoints import NO_FAILURE_INTERVAL
from goodput_sim.sim.engine import Simulation
from goodput_sim.sim.observe import RoundObserver
from goodput_sim.sim.recording import round_row
from goodput_sim.sim.result import SimResult
from goodput_sim.spec import SimConfig, build_config, has_failures

if TYPE_CHECKING:
    from tqdm import tqdm

DEFAULT_POLICIES = ("fifo", "tiresias", "optimus", "throughput", "goodput")


def as_cluster(cluster: ClusterSpec | str | Path, config: SimConfig | None = None) -> ClusterSpec:
    """A :class:`ClusterSpec` as is, or parsed from ``NODESxGPUS`` or a cluster YAML file; with
    an autoscaling ``config``, the pool of machines it may grow to."""
    spec = cluster if isinstance(cluster, ClusterSpec) else parse_cluster(cluster)
    return pool_cluster(spec, config.autoscale if config is not None else None)


def parse_policies(text: str) -> list[str]:
    """Policy names from comma-separated text (``"fifo, goodput"``); blanks are dropped."""
    return [name.strip() for name in text.split(",") if name.strip()]


def check_policies(
    names: Iterable[str], agent: str | None = None, params: Mapping[str, Any] | None = None
) -> list[str]:
    """The names as a list, after failing fast on an unknown policy, agent or parameter
    (before any simulation runs)."""
    names = list(names)
    if not names:
        raise InputError("--policies", "names no policy")
    for name in names:
        policy_class(name, "--policies")
        make_policy_and_agent(name, agent, params)
    return names


def baselines(names: Iterable[str], reference: str = "goodput") -> list[str]:
    """The policies among ``names`` the claim check may set ``reference`` against: not the
    reference itself, its own variants (subclasses such as ``goodput-ga``), nor its successors
    (``sia``, whose ``claim_baseline`` is False)."""
    ours = policy_class(reference)
    return [
        n for n in names if not issubclass(policy_class(n), ours) and policy_class(n).claim_baseline
    ]


def declared_params(role: str, name: str) -> set[str]:
    """The parameter names the policy (``role`` ``policy``) or batch agent (``agent``) called
    ``name`` declares; an unknown name is a one-line error."""
    owner = policy_class(name) if role == "policy" else agent_class(name)
    return {p.name for p in owner.params}


def split_params(
    policy: type[Policy], agent: type[BatchAgent], params: Mapping[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``params`` divided between a policy and its agent by the names each declares; a key
    may be written ``policy.KEY`` or ``agent.KEY`` to say whose it is."""
    mine: dict[str, Any] = {}
    theirs: dict[str, Any] = {}
    policy_keys = {p.name for p in policy.params}
    agent_keys = {p.name for p in agent.params}
    for key, value in (params or {}).items():
        owner, dot, bare = key.partition(".")
        if dot and owner in ("policy", "agent"):
            side = mine if owner == "policy" else theirs
        elif key in policy_keys or key not in agent_keys:
            side, bare = mine, key  # unknown keys are reported against the policy
        else:
            side, bare = theirs, key
        if bare in side:
            raise InputError("--param", f"{key!r} sets {bare!r} a second time")
        side[bare] = value
    return mine, theirs


def canonical_params(
    policy: str, agent: str | None, params: Mapping[str, Any] | None
) -> dict[str, Any]:
    """``params`` as the values the policy and agent will use, under one spelling each (the
    bare name; ``agent.KEY`` where the policy declares the same name), so that ``-1``, ``'-1'``
    and ``policy.p: -1`` are one setting, not three runs of it."""
    policy_cls = policy_class(policy)
    agent_cls = agent_class(policy_cls.default_agent if agent is None else agent)
    mine, theirs = split_params(policy_cls, agent_cls, params)

    def value(owner: type, key: str, given: Any) -> Any:
        number = next(p for p in owner.params if p.name == key).convert(given, owner.name)
        # A whole float as an int: ``p: -1`` keeps the spelling (and sweep key) it always had.
        whole = isinstance(number, float) and number.is_integer()
        return int(number) if whole else number

    out = {key: value(policy_cls, key, given) for key, given in mine.items()}
    for key, given in theirs.items():
        out["agent." + key if key in out else key] = value(agent_cls, key, given)
    return out


def make_policy_and_agent(
    policy: str, agent: str | None = None, params: Mapping[str, Any] | None = None, seed: int = 0
) -> tuple[Policy, BatchAgent]:
    """A policy (by name or alias) and a batch agent (the policy's default unless named), with
    ``params`` validated against what each declares."""
    seed = check_seed(seed)
    policy_cls = policy_class(policy)
    agent_cls = agent_class(policy_cls.default_agent if agent is None else agent)
    policy_params, agent_params = split_params(policy_cls, agent_cls, params)
    return policy_cls(seed=seed, **policy_params), agent_cls(**agent_params)


def _workload(
    workload: pd.DataFrame | str | Path | None, profiles: dict, cluster: ClusterSpec
) -> pd.DataFrame:
    """The workload (default: the bundled one), checked against the profiles and cluster."""
    if workload is None:
        workload = bundled_workload()
    if isinstance(workload, str | Path):
        return load_workload(workload, applications=profiles, max_gpus=cluster.max_job_gpus)
    return check_workload(
        workload, "workload", applications=profiles, max_gpus=cluster.max_job_gpus
    )


def run(
    policy: str,
    workload: pd.DataFrame | str | Path | None = None,
    profiles: str | Path | dict | None = None,
    cluster: ClusterSpec | str | Path = "16x4",
    seed: int = 0,
    config: SimConfig | None = None,
    agent: str | None = None,
    params: Mapping[str, Any] | None = None,
    progress: bool = False,
    observers: Sequence[RoundObserver] = (),
    dynamics: Sequence[DynamicFactory | str] = (),
    **settings: Any,
) -> SimResult:
    """Replay ``workload`` (default: the bundled one) under ``policy`` with batch ``agent``
    (default: the policy's own) and ``params`` for either; jobs and rounds tables. With
    ``progress``, a bar of finished jobs appears on a terminal once a run lasts 2 s; each of
    ``observers`` is called with every round's frozen record; ``dynamics`` are built for this
    run beside the registered ones (:mod:`goodput_sim.sim.dynamics`; an installed plugin's by
    its name). Engine ``settings`` go by the CLI's names (``interval=120``, ``mtbf=12``;
    ``goodput_sim.spec``), checked as there, or all at once as a ``config``."""
    seed = check_seed(seed)
    dynamics = as_factories(dynamics)
    config = _settings_config(config, settings, seed, cluster)
    scheduler, batch_agent = make_policy_and_agent(policy, agent, params, seed)
    profile_map = profiles if isinstance(profiles, dict) else load_profiles(profiles)
    spec = as_cluster(cluster, config)
    if spec.declares_failures and (config is None or config.failures is None):
        # The cluster's own failures and reclaims draw from the run's seed, as --mtbf does.
        config = dataclasses.replace(config or SimConfig(), failures=FailureModel(seed=seed))
    frame = _workload(workload, profile_map, spec)
    check_gpu_types(spec, profile_map, frame["application"])
    with progress_bar(progress, len(frame), policy, "job") as bar:
        sim = Simulation(
            frame,
            profile_map,
            scheduler,
            spec,
            config,
            batch_agent,
            bar.update,
            observers,
            dynamics=dynamics,
            seed=seed,
        )
        return sim.run()


def _settings_config(
    config: SimConfig | None,
    settings: Mapping[str, Any],
    seed: int,
    cluster: ClusterSpec | str | Path,
) -> SimConfig | None:
    """``config``, or the one built from CLI-named ``settings`` (not both)."""
    if not settings:
        return config
    if config is not None:
        raise InputError(f"{next(iter(settings))}", "give engine settings or a config, not both")
    return build_config(settings, seed, as_cluster(cluster).nodes)


class _NoBar:
    """The part of a tqdm bar the callers use, doing nothing: the bar when none is shown."""

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, n: int = 1) -> None:
        """Nothing to count."""

    def close(self) -> None:
        """Nothing to close."""


def progress_bar(progress: bool, total: int, desc: str, unit: str) -> tqdm | _NoBar:
    """A progress bar on stderr when asked for and stderr is a terminal (tqdm's
    ``disable=None``), shown only once the work has lasted 2 s. No bar otherwise, and then
    tqdm is not imported (a run to a file or pipe spends nothing on it)."""
    if not progress or not _is_terminal(sys.stderr):
        return _NoBar()
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        delay=2,
        leave=False,
        disable=None if progress else True,
    )


def _is_terminal(stream: object) -> bool:
    """Whether ``stream`` is a terminal, as tqdm decides it for ``disable=None`` (a stream
    without ``isatty`` counts as one)."""
    isatty = getattr(stream, "isatty", None)
    return isatty is None or bool(isatty())


def _run_one(args: tuple) -> SimResult:
    return run(*args)


@dataclass
class Comparison:
    """Results of several policies on the same inputs."""

    results: dict[str, SimResult]
    summary: pd.DataFrame  # one row per policy
    claim: dict

    def as_json(self) -> dict:
        return {"policies": self.summary.to_dict(orient="index"), "claim": self.claim}


def compare(
    policies: list[str] | tuple[str, ...] = DEFAULT_POLICIES,
    workload: pd.DataFrame | str | Path | None = None,
    profiles: str | Path | None = None,
    cluster: ClusterSpec | str | Path = "16x4",
    seed: int = 0,
    config: SimConfig | None = None,
    workers: int = 1,
    agent: str | None = None,
    params: Mapping[str, Any] | None = None,
    progress: bool = False,
    dynamics: Sequence[DynamicFactory | str] = (),
    **settings: Any,
) -> Comparison:
    """Run each policy on the same inputs (in ``workers`` processes) and summarise; ``agent``,
    ``params`` and ``dynamics`` apply to every policy, and engine ``settings`` as in
    :func:`run`."""
    seed = check_seed(seed)
    dynamics = as_factories(dynamics)
    config = _settings_config(config, settings, seed, cluster)
    policies = check_policies(policies, agent, params)
    spec = as_cluster(cluster, config)
    profile_map = load_profiles(profiles)
    frame = _workload(workload, profile_map, spec)
    check_gpu_types(spec, profile_map, frame["application"])
    extra = (False, (), dynamics)  # run's progress, observers and dynamics
    tasks = [
        (name, frame, profiles, spec, seed, config, agent, params, *extra) for name in policies
    ]
    with progress_bar(progress, len(tasks), "policies", "run") as bar:
        if workers > 1 and len(tasks) > 1:
            warm_for(policies)  # compiled once here, not in each worker
            from concurrent.futures import ProcessPoolExecutor, as_completed

            with ProcessPoolExecutor(max_workers=min(workers, len(tasks))) as pool:
                futures = {pool.submit(_run_one, task): task[0] for task in tasks}
                done = {}
                for future in as_completed(futures):
                    done[futures[future]] = future.result()
                    bar.update()
            results = {name: done[name] for name in policies}
        else:
            results = {}
            for name in policies:
                results[name] = run(
                    name, frame, profile_map, spec, seed, config, agent, params, *extra
                )
                bar.update()
    summaries = {name: run_summary(r) for name, r in results.items()}
    if has_failures(config, spec, profile_map.values()):
        plain_config, plain_cluster = failure_free(config, spec)
        for name in policies:  # the same runs with no node failing, for the cost of failures
            twin = run(
                name, frame, profile_map, plain_cluster, seed, plain_config, agent, params, *extra
            )
            summaries[name]["avg_jct_without_failures"] = run_summary(twin)["avg_jct"]
    for name, r in results.items():
        summaries[name]["wall_seconds"] = r.wall_seconds
    summary = pd.DataFrame.from_dict(summaries, orient="index")
    return Comparison(results, summary, claim_check(summaries, baselines=baselines(policies)))


def failure_free(config: SimConfig | None, cluster: ClusterSpec) -> tuple[SimConfig, ClusterSpec]:
    """The twin of a failure run: no failure model, no job crash (the profiles' own neither),
    and the cluster without its own failure and reclaim rates (prices and spot groups kept).
    An ``auto`` checkpoint interval becomes what Young/Daly gives with nothing failing
    (:data:`~goodput_sim.sim.dynamics.checkpoints.NO_FAILURE_INTERVAL`)."""
    config = config or SimConfig()
    interval = config.checkpoint_interval
    if interval == "auto":
        interval = NO_FAILURE_INTERVAL
    plain = dataclasses.replace(config, failures=None, checkpoint_interval=interval, crashes=False)
    return plain, cluster.without_failures()


MAX_PATH_BYTES, MAX_NAME_BYTES = 4096, 255  # Linux's PATH_MAX and NAME_MAX
STAGING_BYTES = len(".replaced")  # the longest suffix a staged write adds to an output's name


def checked_output_path(path: str | Path, option: str) -> Path:
    """``path`` if it can name an output: no control characters (a newline would split every
    status line), each part at most 255 bytes and the whole at most 4096, no leading ``~``, and a
    last part that names something (not ``.``, ``..`` or empty, so a folder is never replaced by
    its parent)."""
    text = str(path)
    if not text.strip():
        raise InputError(option, "is empty; expected a path")
    bad = next((c for c in text if ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        raise InputError(option, f"contains the control character {bad!r}; expected a path")
    if len(text.encode()) > MAX_PATH_BYTES or any(
        len(part.encode()) > MAX_NAME_BYTES for part in text.split("/")
    ):
        raise InputError(option, f"is too long (parts of at most {MAX_NAME_BYTES} bytes)")
    last_bytes = len(text.rstrip("/").rsplit("/", 1)[-1].encode())
    if last_bytes > MAX_NAME_BYTES - STAGING_BYTES:  # room for .partial or .replaced beside it
        raise InputError(
            option,
            f"names an output of {last_bytes} bytes; at most {MAX_NAME_BYTES - STAGING_BYTES} "
            "(results are staged beside it under the name plus '.replaced')",
        )
    if text.startswith("~"):  # pandas would write to the home folder it names
        raise InputError(option, f"{text!r} starts with '~', which is not expanded; give the path")
    last = text.rstrip("/").rsplit("/", 1)[-1]
    if last in ("", ".", ".."):
        raise InputError(option, f"{text!r} does not name a new file or folder; add a name")
    return Path(path)


def _restore_replaced(out: Path) -> None:
    """Put back earlier results that a swap interrupted between its two renames left only in
    ``<out>.replaced``."""
    retired = out.with_name(out.name + ".replaced")
    if retired.is_dir() and not out.exists():
        os.replace(retired, out)


def writable_folder(path: str | Path, option: str = "--out", force: bool = False) -> Path:
    """``path``, after checking that results can be written there (a new folder under a
    writable folder, or, with ``force``, an existing one to replace) before any simulation
    runs, so a long run never fails at the end on its output. Nothing is created here."""
    path = checked_output_path(path, option)
    _restore_replaced(path)
    if path.exists() and not path.is_dir():
        raise InputError(option, f"{path} is a file, expected a results folder")
    if path.is_dir() and any(path.iterdir()) and not force:
        raise InputError(option, f"{path} holds earlier results; pass --force to replace them")
    _check_creatable(path, option)
    return path


def _check_creatable(path: Path, option: str, target: Path | None = None) -> None:
    """Refuse ``path`` (a folder to hold ``target``) when its nearest existing ancestor is a
    file or is not writable."""
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(option, f"{existing} is a file, so {target or path} cannot be created")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(option, f"{existing} is not writable")


def writable_file(path: str | Path, option: str = "--output", force: bool = False) -> Path:
    """``path``, checked before any work as an output file can be (the one rule of every
    command: an output you name is never replaced silently; ``force`` replaces it), with its
    missing parent folders created."""
    path = checked_output_path(path, option)
    if path.is_dir():
        raise InputError(option, f"{path} is a folder, expected a file name")
    if path.exists() and not force:
        raise InputError(option, f"{path} exists; pass --force to replace it")
    _check_creatable(path.parent, option, path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(option, f"cannot create {path.parent}: {err.strerror}") from None
    try:  # a real write: permission bits say nothing to root, nor of /proc or a read-only disk
        handle, probe = tempfile.mkstemp(dir=path.parent, prefix=".write-probe-")
        os.close(handle)
        os.unlink(probe)
    except OSError as err:
        raise InputError(option, f"cannot write in {path.parent}: {err.strerror}") from None
    return path


@contextmanager
def writing(path: Path, option: str = "--output") -> Iterator[None]:
    """Writing the output ``path``: an error of the disk or the system (full, read-only, not
    permitted) is a one-line error naming the option and the path."""
    try:
        yield
    except OSError as err:
        raise InputError(option, f"cannot write {path}: {err.strerror or err}") from None


@contextmanager
def staged_folder(out: Path) -> Iterator[Path]:
    """A folder to write results into, swapped in for ``out`` only when complete: an
    interruption leaves any earlier results in ``out`` intact, beside an unfinished
    ``<out>.partial``."""
    _restore_replaced(out)
    staging = out.with_name(out.name + ".partial")
    if staging.exists():
        shutil.rmtree(staging)
    try:
        staging.mkdir(parents=True)
    except OSError as err:
        raise InputError("--out", f"cannot create {staging}: {err.strerror}") from None
    yield staging
    if out.exists():
        retired = out.with_name(out.name + ".replaced")
        if retired.exists():
            shutil.rmtree(retired)
        os.replace(out, retired)
        os.replace(staging, out)
        shutil.rmtree(retired)
    else:
        os.replace(staging, out)


def input_hashes(inputs: dict[str, str | Path | None]) -> dict[str, str]:
    """``file_hash`` of each input that exists, for the manifest's ``input_sha256``."""
    return {k: file_hash(v) for k, v in inputs.items() if v is not None and Path(v).exists()}


def write_run(
    result: SimResult,
    out: Path,
    inputs: dict[str, str | Path | None],
    seed: int,
    *,
    hashes: dict[str, str] | None = None,
    summary: dict | None = None,
    params: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
    figure: bool = True,
) -> Path:
    """A results folder: jobs.csv, rounds.csv, fairness.csv (finish-time fairness per job),
    manifest.json and (with ``figure``) jct_cdf.png.

    ``inputs`` are paths from the working folder (or the results folder's own files), recorded
    as :func:`~goodput_sim.results.saved.recorded_inputs` says: relative to ``out`` where they
    can be, so a copied results folder replays. ``hashes`` (``input_hashes(inputs)``) and
    ``summary`` (``summarize`` of the jobs) are computed unless given, so runs on the same
    inputs can share them. ``params`` are the parameters the run was given and ``extra`` more
    manifest entries (a sweep's workload source): with them the manifest is enough to replay
    the run (``run --manifest``)."""
    out.mkdir(parents=True, exist_ok=True)
    result.jobs.to_csv(out / "jobs.csv", index=False, float_format="%.6f")
    rounds = result.rounds
    if rounds.columns.empty:  # stopped before its first round: no rows, but the columns
        rounds = pd.DataFrame(columns=list(round_row(0.0, (), 0, 0, 0)))
    rounds.to_csv(out / "rounds.csv", index=False)
    if result.fairness is not None:
        result.fairness.to_csv(out / "fairness.csv", index=False, float_format="%.6f")
    if hashes is None:
        hashes = input_hashes(inputs)
    own = result.manifest
    named, absolute = recorded_inputs(inputs, out)
    head = ("goodput_sim_version", "policy", "agent", "config", "cluster")
    manifest = {
        **{key: own[key] for key in head},
        "seed": seed,
        "params": dict(params or {}),
        **(extra or {}),
        "inputs": named,
        **({"inputs_absolute": absolute} if absolute else {}),
        "input_sha256": hashes,
        **{key: value for key, value in own.items() if key not in head},
    }
    if summary is not None:
        manifest["summary"] = summary
    (out / "manifest.json").write_text(jsonio.dumps(manifest) + "\n")
    if figure:
        from goodput_sim.results.plots import caption_of, jct_cdf  # matplotlib: a third of a second

        name = result.policy["name"]
        jct_cdf({name: result.jobs}, out / "jct_cdf.png", caption_of({name: manifest}))
    return out


def default_profiles_path(profiles: str | Path | None) -> Path:
    return Path(profiles) if profiles is not None else bundled_profiles_path()
