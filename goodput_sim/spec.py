"""One run specification: every engine setting declared once, and the key of a whole run.

Each :class:`Setting` names a value a run can be given (type, range or choices, unit, help,
default) and where it lives in :class:`SimConfig` (``interval``,
``failures.mtbf_hours``, ``autoscale.rule``...). From this one table come SimConfig's checks,
the CLI options of ``run`` and ``compare`` (``--restart-delay``...), the keys of their
``--config`` files and of an experiment file's ``settings`` (every one of which may be a list:
an axis of the sweep), the config a manifest records and its replay, and :func:`run_key`, the
content hash under which a sweep stores and reuses a run.

A setting's name is its ``--config`` key, its experiment-file key and, with dashes, its CLI
option. Failure settings build a :class:`~goodput_sim.inputs.failures.FailureModel` seeded with the
run's seed; autoscaling settings an :class:`~goodput_sim.autoscale.AutoscaleConfig`. Those two
classes check their own fields (their messages name the CLI option); the ranges declared here
for them are the ones they enforce (a test holds the two together).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import numbers
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goodput_sim.autoscale import AUTOSCALERS, AutoscaleConfig
from goodput_sim.errors import InputError
from goodput_sim.inputs.cluster import ClusterSpec
from goodput_sim.inputs.failures import REPAIRS, Failure, FailureModel, read_failure_trace
from goodput_sim.models.lr import parse_overrides
from goodput_sim.plugins import did_you_mean
from goodput_sim.usertext import parse_float

if TYPE_CHECKING:
    from goodput_sim.profiles.base import ApplicationProfile

DAY = 86400.0
DECADE = 10 * 365 * DAY
MAX_NODES = 100_000  # a failure trace read with no cluster in view is checked against this
MAX_EVENTS = 20_000_000  # the default work budget: a few minutes of the slowest policy
TAIL_GEOMETRIES = ("examples", "steps")
KEY_VERSION = 1  # bump when the run key's record changes meaning, so old runs are redone


@dataclass(frozen=True)
class SimConfig:
    """Engine settings (defaults follow the Pollux artifact, SPEC 5.9); their types, ranges,
    units and CLI options are declared once in :mod:`goodput_sim.spec`."""

    interval: float = 60.0  # seconds between scheduling rounds
    restart_delay: float = 30.0  # seconds lost whenever a job's allocation changes
    interference: float = 0.0  # slowdown of distributed jobs sharing a node (0, 0.25, 0.5)
    horizon: float | None = None  # stop here; unfinished jobs are reported as such
    oracle: bool = False  # policies see true throughput instead of online-fitted beliefs
    # How a job split over nodes reads its measured step time: "allocation" takes the GPUs per
    # node in the order the policy filled the nodes, as the reference does (SPEC 5.9 step 5);
    # "node" takes them in node-id order. Placements are canonical up to rotation (SPEC 2.1),
    # so the two differ only for jobs on three or more nodes with unequal shares.
    placement_order: str = "allocation"
    max_wall: float | None = None  # seconds of wall time after which a run stops, marked partial
    stall_hours: float = 24.0  # simulated hours jobs may wait with none holding a GPU
    max_events: int = MAX_EVENTS  # the work budget: job-rounds plus node failures and repairs
    failures: FailureModel | None = None  # node failures and repairs (none by default)
    checkpoint_interval: float | str | None = None  # seconds or "auto"; default: profile's/30 min
    autoscale: AutoscaleConfig | None = None  # grow and shrink the cluster (fixed by default)
    checkpoint_seconds: float | None = None  # save time; default: the profile's, else 0
    reallocation_checkpoint: str = "free"  # "free" (AdaptDL), "charged" or "none"
    # Training progress (sim.lr_progress): "noise" (Pollux's gain) or "lr-aware" (a fixed
    # example budget, final loss from learning rate and noise); learning-rate schedules; the
    # lr-aware descent; and whether to record seed 004's objective per job under "noise".
    progress: str = "noise"
    lr_schedule: str | None = None
    lr_descent: float = 5.0
    seed_objective: bool = False
    tail_geometry: str = "examples"  # lr-aware: how the tail-weighted plan is realised
    crashes: bool = True  # jobs crash at all (off in a run's failure-free twin)

    def __post_init__(self) -> None:
        check_config(self)  # against the declarations of goodput_sim.spec


@dataclass(frozen=True)
class Setting:
    """One engine setting: a type (float, int, bool, str with ``choices``, Path for a file,
    dict for a mapping), a default, an inclusive range (``open_low``/``open_high`` exclude an
    end), a unit and the SimConfig field it sets (dotted inside failures and autoscale)."""

    name: str
    kind: type
    default: Any
    help: str
    field: str
    unit: str = ""
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    choices: tuple[str, ...] = ()
    optional: bool = False  # None is a value (and the default means "off")
    option: bool = True  # a CLI option of its own (the autoscaler's parameters use --param)
    parse: Callable[[str], Any] | None = None  # a free-form string's reader (ValueError: bad)
    words: tuple[str, ...] = ()  # words a number setting also takes (``auto``)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def group(self) -> str | None:
        """``failures`` or ``autoscale`` for a nested setting, None for SimConfig's own."""
        head, dot, _ = self.field.partition(".")
        return head if dot else None

    def expected(self) -> str:
        """What is valid, in words (for messages and help)."""
        if self.kind is bool:
            return "true or false"
        if self.choices:
            return " or ".join(self.choices)
        if self.parse is not None:
            return self.help.rstrip(".")
        if self.kind is Path:
            return "a file"
        if self.kind is dict:
            return "a mapping"
        low = "-inf" if self.low is None else _number(self.low)
        high = "inf" if self.high is None else _number(self.high)
        brackets = ("(" if self.open_low else "[", ")" if self.open_high else "]")
        text = f"{brackets[0]}{low}, {high}{brackets[1]}"
        words = "".join(f" or {w}" for w in self.words)
        return f"{_UNIT_WORDS.get(self.unit, self.unit)} in {text}{words}".strip()

    def in_range(self, value: Any) -> bool:
        """Whether ``value`` (of the right type) lies within the declared range or choices."""
        if value is None:
            return self.optional
        if isinstance(value, str) and value in self.words:
            return True
        if self.choices:
            return value in self.choices
        if self.parse is not None:
            return _parses(self, value)
        if self.kind in (float, int):
            if not math.isfinite(value):
                return False
            if self.low is not None and (value < self.low or (self.open_low and value == self.low)):
                return False
            return self.high is None or not (
                value > self.high or (self.open_high and value == self.high)
            )
        return True

    def convert(self, value: Any) -> Any:
        """``value`` (from YAML, JSON, click or Python) as this setting's type; SimConfig's own
        settings are range-checked here too, nested ones by the class they build (or, when
        the run builds none, by :func:`build_config`)."""
        problem = InputError(self.flag, f"invalid value {value!r}; expected {self.expected()}")
        if value is None:
            if not self.optional:
                raise problem
            return None
        converted = _typed(self, value)
        if converted is _INVALID or (self.group is None and not self.in_range(converted)):
            raise problem
        return converted


_INVALID = object()
_UNIT_WORDS = {"s": "seconds", "h": "hours", "": ""}


def _number(x: float) -> str:
    return f"{x:.0f}" if float(x).is_integer() else f"{x:g}"


def _parses(setting: Setting, value: Any) -> bool:
    """Whether a free-form string setting's reader accepts ``value``."""
    try:
        setting.parse(value)
    except (ValueError, TypeError):
        return False
    return isinstance(value, str)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _typed(setting: Setting, value: Any) -> Any:
    """``value`` as the setting's type, or ``_INVALID``."""
    kind = setting.kind
    if setting.words and isinstance(value, str):
        if value in setting.words:
            return value
        try:  # a number given as text (the command line's option type is text)
            value = parse_float(value)
        except ValueError:
            return _INVALID
    if kind is bool:
        return value if isinstance(value, bool) else _INVALID
    if kind is str:
        if setting.parse is not None:
            return value if _parses(setting, value) else _INVALID
        return value if isinstance(value, str) and value in setting.choices else _INVALID
    if kind is Path:
        if isinstance(value, tuple) and all(isinstance(f, Failure) for f in value):
            return value  # a trace already read (from a config or a manifest)
        return str(value) if isinstance(value, str | Path) and str(value) else _INVALID
    if kind is dict:
        if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
            return tuple(sorted(value.items()))
        pairs = isinstance(value, tuple | list)
        if pairs and all(isinstance(p, tuple | list) and len(p) == 2 for p in value):
            return tuple(sorted((str(k), v) for k, v in value))
        return _INVALID
    if not _is_number(value):
        return _INVALID
    if kind is int:
        return int(value) if float(value).is_integer() else _INVALID
    return float(value)


SETTINGS: tuple[Setting, ...] = (
    Setting("interval", float, 60.0, "Seconds between rounds.", "interval", "s", 1, DAY),
    Setting(
        "restart_delay",
        float,
        30.0,
        "Seconds lost when a job's allocation changes.",
        "restart_delay",
        "s",
        0,
        DAY,
    ),
    Setting(
        "interference",
        float,
        0.0,
        "Slowdown of distributed jobs sharing a node (the Pollux artifact's interference model).",
        "interference",
        "fraction",
        0,
        1,
        open_high=True,
    ),
    Setting(
        "horizon",
        float,
        None,
        "Stop after this many seconds.",
        "horizon",
        "s",
        0,
        DECADE,
        open_low=True,
        optional=True,
    ),
    Setting("oracle", bool, False, "Policies see true throughput, not online fits.", "oracle"),
    Setting(
        "max_wall",
        float,
        None,
        "Stop a run after this many seconds of wall time; results marked partial.",
        "max_wall",
        "s",
        0,
        30 * DAY,
        open_low=True,
        optional=True,
    ),
    Setting(
        "stall_hours",
        float,
        24.0,
        "Stop a run (exit 3) once this many simulated hours pass with no net work: jobs "
        "waiting with none holding a GPU (a policy or cluster that cannot run them), or "
        "losing their work as fast as they do it (failures, crashes, unsaved moves).",
        "stall_hours",
        "h",
        0,
        DECADE / 3600,
        open_low=True,
    ),
    Setting(
        "max_events",
        int,
        MAX_EVENTS,
        "Work budget: job-rounds (each active job in each round) plus node failures and "
        "repairs. A run expected to exceed it is refused; one that does is stopped (exit 3).",
        "max_events",
        "",
        1,
        1e13,
    ),
    Setting(
        "placement_order",
        str,
        "allocation",
        "Node order in which a split job reads measured step times (allocation: the Pollux "
        "artifact's).",
        "placement_order",
        choices=("allocation", "node"),
    ),
    Setting(
        "progress",
        str,
        "noise",
        "How training progresses: by the gradient noise scale (Pollux), or by learning rate "
        "and noise through a fixed example budget, reporting final loss (the tail-weighted "
        "schedule's model).",
        "progress",
        choices=("noise", "lr-aware"),
    ),
    Setting(
        "lr_schedule",
        str,
        None,
        "Learning-rate schedule of every application (cosine, step(at=0.5/0.75,factor=0.1), "
        "cosine(floor=0.1), constant) or of some (cifar10:step,bert:cosine) [default: each "
        "profile's, else its documented default].",
        "lr_schedule",
        optional=True,
        parse=parse_overrides,
    ),
    Setting(
        "lr_descent",
        float,
        5.0,
        "lr-aware: e-folds of deterministic descent over a job's static-batch run.",
        "lr_descent",
        "",
        0,
        50,
        open_low=True,
    ),
    Setting(
        "seed_objective",
        bool,
        False,
        "Record the tail-weighted schedule's objective per job (learning-rate-weighted noise, "
        "final loss); "
        "always on with --progress lr-aware.",
        "seed_objective",
    ),
    Setting(
        "tail_geometry",
        str,
        "examples",
        "lr-aware: how the tail-weighted agent's plan is realised: each epoch keeps the static "
        "run's examples, its steps following the batch (examples), or the plan's batches are "
        "laid on the static run's optimizer steps, the learning rate indexed by step, so steps "
        "and examples both equal the static run's (steps, seed 004's geometry).",
        "tail_geometry",
        choices=TAIL_GEOMETRIES,
    ),
    Setting(
        "mtbf",
        float,
        None,
        "Mean hours between failures per node.",
        "failures.mtbf_hours",
        "h",
        0,
        DECADE / 3600,
        open_low=True,
        optional=True,
    ),
    Setting(
        "repair_hours",
        float,
        1.0,
        "Repair time.",
        "failures.repair_hours",
        "h",
        0,
        DECADE / 3600,
        open_low=True,
    ),
    Setting(
        "repair",
        str,
        "fixed",
        "Repair times fixed, or drawn with --repair-hours as mean.",
        "failures.repair",
        choices=REPAIRS,
    ),
    Setting(
        "failure_trace",
        Path,
        None,
        "CSV of failures (time,node,duration in seconds) instead of --mtbf.",
        "failures.trace",
        optional=True,
    ),
    Setting(
        "checkpoint_interval",
        float,
        None,
        "Seconds of training between checkpoints, or auto: the Young/Daly optimum "
        "sqrt(2 x save seconds x effective MTBF) [default: the profile's, else 1800].",
        "checkpoint_interval",
        "s",
        1,
        DECADE,
        optional=True,
        words=("auto",),
    ),
    Setting(
        "checkpoint_seconds",
        float,
        None,
        "Seconds a checkpoint takes to save, lost to training at every save [default: the "
        "profile's, else 0].",
        "checkpoint_seconds",
        "s",
        0,
        DAY,
        optional=True,
    ),
    Setting(
        "reallocation_checkpoint",
        str,
        "free",
        "At a reallocation a job saves a checkpoint within its restart delay (free, as AdaptDL "
        "does), pays the save on top (charged), or saves none and restores its last one (none).",
        "reallocation_checkpoint",
        choices=("free", "charged", "none"),
    ),
    Setting(
        "job_crash_hours",
        float,
        None,
        "Mean hours a job runs between crashes (exponential); it restarts from its last "
        "checkpoint [default: the profile's crash_hours, else none].",
        "failures.job_crash_hours",
        "h",
        0,
        DECADE / 3600,
        open_low=True,
        optional=True,
    ),
    Setting(
        "crashes",
        bool,
        True,
        "Jobs crash, at --job-crash-hours or else at their profile's crash_hours; "
        "--no-crashes turns every crash off (as a run's failure-free twin does).",
        "crashes",
    ),
    Setting(
        "lifetime",
        str,
        "exponential",
        "Node lifetimes between failures: exponential, or Weibull (mean --mtbf).",
        "failures.lifetime",
        choices=("exponential", "weibull"),
    ),
    Setting(
        "weibull_shape",
        float,
        0.7,
        "Shape of Weibull lifetimes (below 1: failures come soon after repairs).",
        "failures.weibull_shape",
        "",
        0.1,
        10,
    ),
    Setting(
        "min_nodes",
        int,
        None,
        "Autoscale from this many nodes.",
        "autoscale.min_nodes",
        "nodes",
        1,
        optional=True,
    ),
    Setting(
        "max_nodes",
        int,
        None,
        "Autoscale up to this many nodes.",
        "autoscale.max_nodes",
        "nodes",
        1,
        MAX_NODES,
        optional=True,
    ),
    Setting(
        "autoscaler",
        str,
        "utility",
        "Autoscaling rule (parameters: --param autoscaler.KEY=VALUE).",
        "autoscale.rule",
        choices=tuple(AUTOSCALERS),
    ),
    Setting(
        "startup_delay",
        float,
        120.0,
        "Seconds before a started node is usable.",
        "autoscale.startup_delay",
        "s",
        0,
        DAY,
    ),
    Setting(
        "node_price",
        float,
        None,
        "Price of one node-hour.",
        "autoscale.node_price",
        "price per node-hour",
        0,
        optional=True,
    ),
    Setting(
        "autoscaler_params",
        dict,
        (),
        "Parameters of the autoscaling rule (on the command line: --param autoscaler.KEY=VALUE).",
        "autoscale.params",
        option=False,
    ),
)
"""Every engine setting, in the order the CLI lists them."""

BY_NAME: Mapping[str, Setting] = {s.name: s for s in SETTINGS}


def setting(name: str) -> Setting:
    """The declared setting ``name``; an unknown name is an error listing the known ones."""
    if name not in BY_NAME:
        hint = did_you_mean(name, BY_NAME)
        raise InputError(
            "settings", f"unknown setting {name!r}{hint}; known: {', '.join(sorted(BY_NAME))}"
        )
    return BY_NAME[name]


def check_config(config: SimConfig) -> None:
    """SimConfig's own fields against their declarations (one-line error naming the option)."""
    for s in SETTINGS:
        if s.group is None:
            value = getattr(config, s.field)
            number = s.kind in (float, int) and value is not None and value not in s.words
            if (number and not _is_number(value)) or not s.in_range(value):
                raise InputError(s.flag, f"invalid value {value!r}; expected {s.expected()}")
    if config.tail_geometry != "examples" and config.progress != "lr-aware":
        raise InputError(
            "--tail-geometry",
            f"{config.tail_geometry} needs --progress lr-aware (under noise a job's work is "
            "progress, not examples or steps)",
        )


def resolve_settings(values: Mapping[str, Any]) -> dict[str, Any]:
    """Every setting's value: the given ones converted and checked, the rest at defaults."""
    for name in values:
        setting(name)
    return {s.name: s.convert(values[s.name]) if s.name in values else s.default for s in SETTINGS}


def build_config(values: Mapping[str, Any], seed: int = 0, nodes: int | None = None) -> SimConfig:
    """The SimConfig of flat setting ``values`` (missing ones at their defaults): failures are
    seeded with the run's ``seed`` and a failure trace file is read and checked against
    ``nodes`` (the cluster's, or ``max_nodes`` when autoscaling)."""

    given = resolve_settings(values)
    own = {s.field: given[s.name] for s in SETTINGS if s.group is None}
    scale = _autoscale(given)
    reach = scale.max_nodes if scale is not None else nodes
    failures = _failures(given, seed, reach)
    if failures is None:  # no FailureModel checks them: an out-of-range value is still wrong
        for s in SETTINGS:
            if s.group == "failures" and not s.in_range(given[s.name]):
                raise InputError(
                    s.flag, f"invalid value {given[s.name]!r}; expected {s.expected()}"
                )
    return SimConfig(**own, failures=failures, autoscale=scale)


def _failures(given: dict[str, Any], seed: int, nodes: int | None) -> FailureModel | None:
    """The failure model of resolved settings, or None when no node fails."""
    mtbf, trace, crash = given["mtbf"], given["failure_trace"], given["job_crash_hours"]
    if mtbf is not None and trace is not None:
        raise InputError("--mtbf", "give --mtbf or --failure-trace, not both")
    if mtbf is None and trace is None and crash is None:
        return None
    if isinstance(trace, str):
        trace = read_failure_trace(trace, nodes if nodes is not None else MAX_NODES)
    return FailureModel(
        mtbf,
        given["repair_hours"],
        given["repair"],
        trace or (),
        seed,
        given["lifetime"],
        given["weibull_shape"],
        crash,
    )


AUTOSCALER_SETTINGS = ("autoscaler", "autoscaler_params", "startup_delay", "node_price")
"""Settings of the autoscaler that only mean something with --min-nodes and --max-nodes."""


def _given_text(declared: Setting, value: Any) -> str:
    """A setting as given, for an error: ``--autoscaler search``, ``--param autoscaler.*``."""
    if declared.name == "autoscaler_params":
        return "--param autoscaler.KEY=VALUE"
    return f"{declared.flag} {value:g}" if isinstance(value, float) else f"{declared.flag} {value}"


def _autoscale(given: dict[str, Any]) -> AutoscaleConfig | None:
    """The autoscaling settings of resolved settings, or None for a fixed cluster."""
    low, high = given["min_nodes"], given["max_nodes"]
    if (low is None) != (high is None):
        raise InputError("--min-nodes" if low is None else "--max-nodes", "give both or neither")
    if low is None:  # a fixed cluster: a setting of the autoscaler would be silently unused
        unused = [BY_NAME[n] for n in AUTOSCALER_SETTINGS if given[n] != BY_NAME[n].default]
        if unused:
            first = unused[0]
            raise InputError(
                first.flag if first.option else "--param",
                f"{_given_text(first, given[first.name])} sets the autoscaler, and autoscaler "
                "settings need --min-nodes and --max-nodes (a cluster file's node-group bounds "
                "apply only within them): without them the cluster is fixed",
            )
        return None
    return AutoscaleConfig(
        low,
        high,
        given["autoscaler"],
        given["autoscaler_params"],
        given["startup_delay"],
        given["node_price"],
    )


def values_of(config: SimConfig) -> dict[str, Any]:
    """The flat settings of a SimConfig (a failure trace as the failures it holds)."""
    out = {}
    for s in SETTINGS:
        head, _, tail = s.field.partition(".")
        owner = getattr(config, head)
        value = owner if not tail else (getattr(owner, tail) if owner is not None else s.default)
        if s.name == "failure_trace":
            value = value or None
        elif s.name == "autoscaler_params":
            value = dict(value)
        out[s.name] = value
    return out


def with_settings(
    config: SimConfig, overrides: Mapping[str, Any], seed: int = 0, nodes: int | None = None
) -> SimConfig:
    """``config`` with the flat settings ``overrides`` applied: only the fields they touch change
    (a failure or autoscaling setting rebuilds its whole group, failures seeded with ``seed``)."""
    if not overrides:
        return config
    built = build_config({**values_of(config), **overrides}, seed, nodes)
    touched = {setting(name).field.partition(".")[0] for name in overrides}
    return dataclasses.replace(config, **{f: getattr(built, f) for f in touched})


def config_from_record(record: Mapping[str, Any]) -> SimConfig:
    """The SimConfig a manifest's ``config`` records (``dataclasses.asdict`` of one), every
    key checked: an unknown key, a wrong type or a value out of its declared range is an error
    naming ``config.KEY`` (a record is read back only as this version wrote it)."""

    if not isinstance(record, Mapping):
        raise InputError("config", "expected an object of engine settings")
    groups = {"failures": FailureModel, "autoscale": AutoscaleConfig}
    known = {f.name for f in dataclasses.fields(SimConfig)}
    _known_keys(record, known, "config")
    for head, kind in groups.items():
        owner = record.get(head)
        if owner is not None:
            if not isinstance(owner, Mapping):
                raise InputError(f"config.{head}", "expected an object or null")
            _known_keys(owner, {f.name for f in dataclasses.fields(kind)}, f"config.{head}")
    values: dict[str, Any] = {}
    for s in SETTINGS:
        head, _, tail = s.field.partition(".")
        if head not in record:
            continue
        owner = record[head]
        if tail and owner is None:
            continue
        value = owner if not tail else owner.get(tail, s.default)
        if s.name == "failure_trace":
            value = _recorded_trace(value)
        values[s.name] = value
    failures = record.get("failures") or {}
    seed = failures.get("seed", 0)
    if not (isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2**32):
        raise InputError("config.failures.seed", f"expected an integer seed, found {seed!r}")
    try:
        return build_config(values, seed=seed)
    except InputError as error:  # named by its option: name it by its key in the record
        field = next((s.field for s in SETTINGS if s.flag == error.source), None)
        raise InputError(f"config.{field}" if field else "config", error.problem) from None


def _known_keys(record: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(str(k) for k in record if k not in known)
    if unknown:
        hint = did_you_mean(unknown[0], known)
        raise InputError(where, f"unknown key(s) {', '.join(unknown)}{hint}")


def _recorded_trace(value: object) -> tuple[Failure, ...] | None:
    """A manifest's failure trace (a list of failures as objects), each entry checked."""
    if not isinstance(value, list | tuple):
        raise InputError("config.failures.trace", f"expected a list of failures, found {value!r}")
    fields = {f.name for f in dataclasses.fields(Failure)}
    out = []
    for k, entry in enumerate(value):
        where = f"config.failures.trace[{k}]"
        if not isinstance(entry, Mapping) or not {"time", "node", "duration"} <= set(entry):
            raise InputError(where, "expected an object with time, node and duration")
        _known_keys(entry, fields, where)
        numbers_ok = all(_is_number(entry[key]) for key in ("time", "duration"))
        node = entry["node"]
        if not numbers_ok or not (isinstance(node, int) and not isinstance(node, bool)):
            raise InputError(where, "expected numbers time and duration and an integer node")
        if not (math.isfinite(entry["time"]) and entry["time"] >= 0 and entry["duration"] > 0):
            raise InputError(where, "expected time >= 0 and a positive duration")
        out.append(Failure(**entry))
    return tuple(out) or None


def non_default(values: Mapping[str, Any]) -> dict[str, Any]:
    """The flat settings among ``values`` that differ from their defaults (converted)."""
    out = {}
    for name, value in values.items():
        s = setting(name)
        converted = s.convert(value)
        default = s.convert(s.default) if s.default is not None else None
        if converted != default:
            out[name] = converted
    return out


GUARD_FIELDS = ("stall_hours", "max_events", "crashes", "tail_geometry")
"""Settings added after the first run keys (the run guards, crashes, the tail geometry): they
enter a key only when not at their default, so a sweep's finished runs keep their keys (a run
such a guard stopped is redone anyway)."""


def _key_config(config: SimConfig) -> dict[str, Any]:
    record = dataclasses.asdict(config)
    for name in GUARD_FIELDS:
        if record[name] == BY_NAME[name].default:
            del record[name]
    return record


def run_key(
    *,
    policy: str,
    agent: str | None,
    params: Mapping[str, Any],
    workload: Mapping[str, Any],
    profiles: str,
    cluster: ClusterSpec,
    config: SimConfig,
    seed: int,
) -> str:
    """sha256 of everything a run's results depend on: policy, agent and parameters, the
    workload's content (``workload``: hashes and how the jobs were drawn), the profiles'
    content hash, every node group with its GPU type, every engine setting (a failure trace by
    the failures it holds) and the seed. Two runs with one key give the same results."""
    record = {
        "key_version": KEY_VERSION,
        "policy": policy,
        "agent": agent,
        "params": sorted([str(k), v] for k, v in params.items()),
        "workload": dict(workload),
        "profiles": profiles,
        "cluster": cluster.key_record(),
        "config": _key_config(config),
        "seed": seed,
    }
    text = json.dumps(record, sort_keys=True, default=str, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def has_failures(
    config: SimConfig | None, cluster: ClusterSpec, profiles: Iterable[ApplicationProfile] = ()
) -> bool:
    """Whether anything fails in a run of ``config`` on ``cluster``: nodes fail or are
    reclaimed, or jobs crash (by the run's rate, or any of ``profiles``' own)."""
    failures = config.failures if config is not None else None
    crashes = config is None or config.crashes
    crashing = crashes and (
        any(getattr(profile, "crash_hours", None) for profile in profiles)
        or (failures is not None and failures.job_crash_hours is not None)
    )
    nodes = failures is not None and failures.active
    return nodes or crashing or cluster.declares_failures
