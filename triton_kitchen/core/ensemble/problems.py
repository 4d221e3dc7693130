"""Findings of the ensemble checks and what every rule shares.

A :class:`Problem` carries a stable ``code``, the English ``message``, ``params`` and, in ``msg``, the
explanation not yet in words (a :class:`Msg`: a ``[problem]`` key of ``lessons/<lang>/ui.toml``), so
:meth:`Problem.text` can render it in another language.  Also here: the collector the rules report
into, config line lookups, and dims comparison.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field

from triton_kitchen.core.config import ConfigError, ModelEntry, load_repository
from triton_kitchen.core.versions import EMBEDDED, TritonVersion

Repo = dict[str, ModelEntry]


@dataclass
class Msg:
    """An explanation not yet in words: a ``[problem]`` key of ``lessons/<lang>/ui.toml`` and its
    arguments (strings, numbers, lists, or other :class:`Msg` rendered in the same language)."""

    key: str
    args: dict = field(default_factory=dict)

    def render(self, lang: str = "en") -> str:
        from triton_kitchen.core.lessons import t

        return t("problem." + self.key, lang, **{k: _render_arg(v, lang) for k, v in self.args.items()})


def _render_arg(value, lang: str):
    if isinstance(value, Msg):
        return value.render(lang)
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(_render_arg(v, lang)) for v in value) if value else Msg("none").render(lang)
    return value


def msg(table_key: str, /, **args) -> Msg:
    return Msg(table_key, args)


def step_ref(i: int, model: str | None = None) -> Msg:
    """Step ``i`` of the config's list (0-based) as people count it: "step 1 (preprocess)"."""
    return msg("step", n=i + 1, model=model) if model else msg("step_bare", n=i + 1)


_BAD_VALUE_KEYS = {
    "integer": "cfg_bad_integer",
    "float": "cfg_bad_float",
    "boolean": "cfg_bad_boolean",
    "enum": "cfg_bad_enum",
    "range": "cfg_out_of_range",
}


def config_error_msg(err: ConfigError) -> Msg:
    """The explanation of a :class:`ConfigError` (a file protobuf cannot read) from its code and params.

    config.py writes the English ``err.message``; when the table's English rendering is not that text
    word for word, the message is shown as written (so the ``check`` output never changes here).
    """
    p, short = err.params, (lambda typ: str(typ).split(".")[-1])
    message = None
    if err.code == "unknown_field":
        hint = msg("did_you_mean_dq", hint=p["suggestion"]) if p.get("suggestion") else None
        message = msg("cfg_unknown_field", field=p.get("field"), type=short(p.get("type")), hint=hint)
    elif err.code == "unknown_enum":
        hint = msg("did_you_mean_dq", hint=p["suggestion"]) if p.get("suggestion") else None
        message = msg("cfg_unknown_enum", value=p.get("value"), type=short(p.get("type")), hint=hint)
    elif err.code == "oneof_conflict":
        a, b = p.get("field"), p.get("other")
        if p.get("oneof") == "scheduling_choice":
            extra = msg("cfg_oneof_ensemble") if "ensemble_scheduling" in (a, b) else None
            message = msg("cfg_oneof_scheduler", field=a, other=b, extra=extra)
        else:
            message = msg("cfg_oneof", field=a, other=b, oneof=p.get("oneof"))
    elif err.code == "duplicate_field":
        message = msg("cfg_duplicate_field", field=p.get("field"))
    elif err.code == "bad_value" and p.get("kind") in _BAD_VALUE_KEYS:
        message = msg(_BAD_VALUE_KEYS[p["kind"]], value=p.get("value"))
    elif err.code == "syntax" and p.get("expected"):
        message = msg("cfg_expected_end", expected=p["expected"])
        if message.render("en") != err.message:
            message = msg("cfg_expected_before", expected=p["expected"], token=repr(err.token))
    elif err.code == "unreadable" and p.get("reason") == "encoding":
        message = msg("cfg_not_utf8")
    elif err.code == "no_config":
        message = msg("cfg_no_config")
    elif err.code == "template_placeholder":
        message = msg("template_placeholder", placeholder=p.get("placeholder"))
    elif err.code == "newer_field":
        message = msg(
            "newer_field",
            field=p.get("field"),
            version=p.get("version"),
            message=short(p.get("type")),
            since=p.get("since"),
            release=p.get("release"),
        )
    if message is None or message.render("en") != err.message:
        message = msg("cfg_syntax" if err.code == "syntax" else "cfg_other", text=err.message)
    return message


@dataclass
class Problem:
    """One finding.  ``severity`` is ``"error"`` (Triton would not load it), ``"warning"`` or ``"note"`` (what
    the verdict depends on but a config cannot show: the image that ships a backend)."""

    severity: str
    code: str
    message: str
    params: dict = field(default_factory=dict)
    line: int | None = None
    triton_message: str | None = None
    model: str | None = None
    path: str | None = None
    msg: Msg | None = field(default=None, repr=False, compare=False)  # ``message`` before rendering

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def text(self, lang: str = "en") -> str:
        """The explanation in ``lang`` ("zh" or "en"); Triton's own wording stays in ``triton_message``."""
        return self.msg.render(lang) if self.msg is not None else self.message

    def format(self, path: str | None = None) -> str:
        """``PATH:LINE: severity: message`` (the ``check`` output line; line 0: the folder itself)."""
        line = self.line if self.line is not None else 1
        return f"{path or self.path or '<config>'}:{line}: {self.severity}: {self.message}"

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("msg")
        return d


def has_errors(problems: list[Problem]) -> bool:
    return any(p.is_error for p in problems)


@dataclass(frozen=True)
class CheckOptions:
    """How the server that would load the repository is started.

    ``autofill``: Triton's auto-complete (off with ``--disable-auto-complete-config``); ``gpus``: how many
    GPUs it has (None: unknown, so GPU ids are only checked for what is wrong everywhere); ``backends``:
    backends it has beyond Triton 2.51's container's; ``backend_directory``: its ``--backend-directory``
    (None: unknown, so a backend that another NVIDIA image ships is a note, not an error); ``version``: the
    Triton version whose rules apply (its schema, and the rules that came or changed after 2.51)."""

    autofill: bool = True
    gpus: int | None = None
    backends: frozenset[str] = frozenset()
    backend_directory: str | None = None
    version: TritonVersion = EMBEDDED


DEFAULT_OPTIONS = CheckOptions()


class Collector:
    def __init__(self, entry: ModelEntry, options: CheckOptions = DEFAULT_OPTIONS) -> None:
        self.entry = entry
        self.options = options
        self.items: list[Problem] = []

    def add(self, severity, code, message: Msg | str, line=None, triton=None, **params) -> Problem:
        if callable(line):  # positions are looked up only for problems actually reported
            line = line()
        msg = message if isinstance(message, Msg) else None
        p = Problem(
            severity,
            code,
            msg.render("en") if msg is not None else message,
            params,
            line if line is not None else self.entry.line("name", 0, default=1),
            triton,
            self.entry.name,
            str(self.entry.path if line == 0 else self.entry.config_path),  # line 0: the folder itself
            msg,
        )
        self.items.append(p)
        return p

    def error(self, code, message, line=None, triton=None, **params) -> Problem:
        return self.add("error", code, message, line, triton, **params)

    def warning(self, code, message, line=None, triton=None, **params) -> Problem:
        return self.add("warning", code, message, line, triton, **params)

    def note(self, code, message, line=None, triton=None, **params) -> Problem:
        return self.add("note", code, message, line, triton, **params)


def as_repo(repo: Repo | str | os.PathLike, version: TritonVersion | None = None) -> Repo:
    if isinstance(repo, dict):
        return repo
    return load_repository(repo, version=version)


def dims_str(dims) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"


def compare_dims(a, b) -> bool:
    """Triton's CompareDimsWithWildcard: same rank, each pair equal or either -1."""
    if len(a) != len(b):
        return False
    return all(x == y or x == -1 or y == -1 for x, y in zip(a, b, strict=True))


def step_path(i: int) -> tuple:
    return ("ensemble_scheduling", 0, "step", i)


def find_io(cfg, kind, name):
    if cfg is None:
        return None
    for io in getattr(cfg, kind):
        if io.name == name:
            return io
    return None


def map_line(e: ModelEntry, i: int, mp: str, key: str) -> int | None:
    n = e.locations.count(*step_path(i), mp)
    found = None
    for j in range(n):
        if e.locations.value(*step_path(i), mp, j, "key", 0) == key:
            found = j
    if found is not None:
        return e.line(*step_path(i), mp, found)
    return e.line(*step_path(i))


def key_of(mapping, value) -> str:
    for k, v in mapping.items():
        if v == value:
            return k
    return ""


def value_line(e: ModelEntry, i: int, mp: str, value: str) -> int | None:
    for j in range(e.locations.count(*step_path(i), mp)):
        if e.locations.value(*step_path(i), mp, j, "value", 0) == value:
            return e.line(*step_path(i), mp, j)
    return e.line(*step_path(i))
