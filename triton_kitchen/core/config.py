"""Read ``config.pbtxt`` files the way Triton does: protobuf text format into ``inference.ModelConfig``.

The app's one config reader: the validator, the diagrams, the CLI and the repository browser all read
model folders through :func:`read_model_dir` / :func:`load_repository` into :class:`ModelEntry`.

Parsing is protobuf's own ``text_format`` (no hand-written parser).  A syntax or schema error
becomes a :class:`ConfigError` with the file, line, column, offending token and a plain
message.  Protobuf's Python parser keeps no source positions, so a small token walker
(``config_locations.locate``) maps field paths to line numbers afterwards; it only *locates*, the
semantics are protobuf's.  It also keeps every map entry, which lets the validator warn
about a repeated map key (protobuf silently keeps the last one).

    cfg = parse_config(text, path="repo/ens/config.pbtxt")
    repo = load_repository("model_repository")     # {dir name: ModelEntry}
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import InitVar, dataclass, field
from pathlib import Path

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from triton_kitchen.core.config_locations import Locations, locate
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.model_config_schema import model_config_class, newer_field_since
from triton_kitchen.core.tensors import DTYPE_SIZES, dtype_name
from triton_kitchen.core.versions import EMBEDDED, TritonVersion

__all__ = [
    "DTYPE_SIZES",
    "ENSEMBLE_PLATFORM",
    "ConfigError",
    "ModelConfig",
    "ModelEntry",
    "dtype_name",
    "load_repository",
    "parse_config",
    "read_config_file",
    "read_model_dir",
    "served_versions",
]

ModelConfig = mc.ModelConfig
ENSEMBLE_PLATFORM = "ensemble"


# ---------------------------------------------------------------------------------------------
# errors


class ConfigError(KitchenError):
    """A config file that protobuf cannot read (syntax or schema), or a file that cannot be read.

    ``code`` is a short stable key for translation (``syntax``, ``unknown_field``,
    ``unknown_enum``, ``bad_value``, ``duplicate_field``, ``oneof_conflict``, ``unreadable``,
    ``no_config``, ``too_large``), ``params`` the values its message needs, ``detail`` protobuf's own wording.
    """

    source = "config"

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
        token: str | None = None,
        code: str = "syntax",
        params: dict | None = None,
        detail: str | None = None,
    ) -> None:
        super().__init__(code, detail or "")
        self.args = (message,)  # as before: the plain message, not protobuf's wording
        self.message = message
        self.path = path
        self.line = line
        self.column = column
        self.token = token
        self.params = dict(params or {})
        self.detail = detail  # protobuf's own wording (None when there is none)

    @property
    def triton_message(self) -> str:
        return f"failed to read text proto from {self.path or 'config.pbtxt'}"

    def __str__(self) -> str:
        where = self.path or "<config>"
        if self.line:
            where += f":{self.line}"
            if self.column:
                where += f":{self.column}"
        return f"{where}: error: {self.message}"


_TOKEN_RE = re.compile(
    r'"(?:[^"\\\n]|\\.)*"?|\'(?:[^\'\\\n]|\\.)*\'?|[A-Za-z_][\w.+-]*|[-+]?[0-9.][\w.+-]*|\S'
)


def _token_at(lines: list[str], line: int | None, column: int | None) -> str | None:
    if not line or line < 1 or line > len(lines):
        return None
    text = lines[line - 1]
    col = max((column or 1) - 1, 0)
    m = _TOKEN_RE.search(text, col)
    return m.group(0) if m else None


def _only_blank_after(lines: list[str], line: int, column: int | None, token: str | None) -> bool:
    """True when nothing but blanks and comments follows the token at (line, column)."""
    rest = lines[line - 1][max((column or 1) - 1, 0) + len(token or "") :] if line <= len(lines) else ""
    tail = [rest] + lines[line:]
    return all(not t.split("#", 1)[0].strip() for t in tail)


def _message_fields(type_name: str, schema=mc.DESCRIPTOR) -> list[str]:
    desc = schema.message_types_by_name.get(type_name.split(".")[-1])
    if desc is None:
        # nested types: search the file
        for top in schema.message_types_by_name.values():
            stack = [top]
            while stack:
                d = stack.pop()
                if d.full_name == type_name:
                    return [f.name for f in d.fields]
                stack.extend(d.nested_types)
        return []
    return [f.name for f in desc.fields]


_DTYPE_ALIASES = {
    "FLOAT": "TYPE_FP32",
    "FLOAT32": "TYPE_FP32",
    "FP32": "TYPE_FP32",
    "TYPE_FLOAT": "TYPE_FP32",
    "TYPE_FLOAT32": "TYPE_FP32",
    "DOUBLE": "TYPE_FP64",
    "TYPE_DOUBLE": "TYPE_FP64",
    "FLOAT64": "TYPE_FP64",
    "HALF": "TYPE_FP16",
    "FLOAT16": "TYPE_FP16",
    "TYPE_HALF": "TYPE_FP16",
    "TYPE_FLOAT16": "TYPE_FP16",
    "INT": "TYPE_INT32",
    "TYPE_INT": "TYPE_INT32",
    "LONG": "TYPE_INT64",
    "TYPE_LONG": "TYPE_INT64",
    "STRING": "TYPE_STRING",
    "BYTES": "TYPE_STRING",
    "TYPE_BYTES": "TYPE_STRING",
    "STR": "TYPE_STRING",
    "BOOL": "TYPE_BOOL",
    "TYPE_BOOLEAN": "TYPE_BOOL",
    "BOOLEAN": "TYPE_BOOL",
}


def _suggest(word: str, choices: list[str]) -> str | None:
    up = word.upper()
    if "TYPE_FP32" in choices:
        if up in _DTYPE_ALIASES:
            return _DTYPE_ALIASES[up]
        if "TYPE_" + up in choices:
            return "TYPE_" + up
    best = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return best[0] if best else None


def _explain_parse_error(
    err: text_format.ParseError, lines: list[str], path: str | None, version: TritonVersion = EMBEDDED
) -> ConfigError:
    """Protobuf's parse error in plain words; ``version`` is the Triton whose schema refused the text."""
    schema = model_config_class(version).DESCRIPTOR.file
    raw = str(err)
    line, column = err.GetLine(), err.GetColumn()
    msg = re.sub(r"^\d+:\d+ : ", "", raw)
    # protobuf sometimes quotes the whole source line first: "'<line>': <message>"
    if line and 1 <= line <= len(lines):
        quoted = f"'{lines[line - 1]}': "
        if msg.startswith(quoted):
            msg = msg[len(quoted) :]
        else:
            msg = re.sub(r"^'.*?': (?=[A-Z])", "", msg, count=1)
    token = _token_at(lines, line, column)
    code, params, plain = "syntax", {"detail": msg}, None
    source = lines[line - 1] if line and 1 <= line <= len(lines) else ""

    if m := re.search(r"\$\{[^}\s]*\}?", source):
        # a template (TensorRT-LLM's fill_template.py, a Helm chart) that was never filled in
        code, params = "template_placeholder", {"placeholder": m.group(0)}
        plain = (
            f"'{m.group(0)}' is an unfilled template placeholder: fill it in (e.g. with fill_template.py) "
            "before Triton reads this file"
        )
        token = m.group(0)
    elif (m := re.search(r'Message type "([\w.]+)" has no field named "([^"]+)"', msg)) and (
        since := newer_field_since(m.group(1), m.group(2))
    ):
        # a field a later Triton's schema has (a did-you-mean would mislead): Triton's wording stays protobuf's
        code = "newer_field"
        params = {
            "field": m.group(2),
            "type": m.group(1),
            "version": str(version),
            "since": str(since),
            "release": since.release,
        }
        plain = (
            f"'{m.group(2)}' is not in Triton {version}'s {m.group(1).split('.')[-1]}: Triton parses it from "
            f"{since} (NGC {since.release}); remove it for this server"
        )
        token = m.group(2)
    elif m := re.search(r'Message type "([\w.]+)" has no field named "([^"]+)"', msg):
        typ, name = m.group(1), m.group(2)
        code, params = "unknown_field", {"field": name, "type": typ}
        hint = _suggest(name, _message_fields(typ, schema))
        params["suggestion"] = hint
        plain = f'unknown field "{name}" in {typ.split(".")[-1]}' + (
            f' (did you mean "{hint}"?)' if hint else ""
        )
        token = name
    elif m := re.search(r'Enum type "([\w.]+)" has no value named (\S+?)\.?$', msg):
        typ, name = m.group(1), m.group(2)
        enum = schema.enum_types_by_name.get(typ.split(".")[-1])
        choices = [v.name for v in enum.values] if enum else []
        if not choices:
            for top in schema.message_types_by_name.values():
                for e in top.enum_types:
                    if e.full_name == typ:
                        choices = [v.name for v in e.values]
        hint = _suggest(name, choices)
        code, params = "unknown_enum", {"value": name, "type": typ, "suggestion": hint}
        plain = f'"{name}" is not a value of {typ.split(".")[-1]}' + (
            f' (did you mean "{hint}"?)' if hint else ""
        )
        token = name
    elif m := re.search(
        r'Field "(\w+)" is specified along with field "(\w+)", another member of oneof "(\w+)"', msg
    ):
        a, b, group = m.group(1), m.group(2), m.group(3)
        code, params = "oneof_conflict", {"field": a, "other": b, "oneof": group}
        if group == "scheduling_choice":
            plain = (
                f'"{a}" and "{b}" cannot both be set: a model has one scheduler '
                "(dynamic_batching, sequence_batching or ensemble_scheduling)"
            )
            if "ensemble_scheduling" in (a, b):
                plain += "; an ensemble has no batcher of its own, its steps batch"
        else:
            plain = f'"{a}" and "{b}" cannot both be set (they are alternatives in "{group}")'
        token = a
    elif m := re.search(r'should not have multiple "(\w+)" fields', msg):
        code, params = "duplicate_field", {"field": m.group(1)}
        plain = f'"{m.group(1)}" is given twice; it takes one value'
        token = m.group(1)
    elif m := re.search(r"Couldn't parse (integer|float|boolean|enum)[^:]*: (.*)", msg, re.I):
        code, params = "bad_value", {"kind": m.group(1).lower(), "value": m.group(2).strip()}
        plain = f"expected {'an' if m.group(1)[0] in 'ie' else 'a'} {m.group(1).lower()}, got {m.group(2).strip()}"
    elif m := re.search(r"Value out of range: (\S+)", msg):
        code, params = "bad_value", {"kind": "range", "value": m.group(1)}
        plain = f"value {m.group(1)} is out of range for this field"
    elif m := re.search(r'Expected "(.+?)"', msg):
        want = m.group(1)
        code, params = "syntax", {"expected": want, "detail": msg}
        at_end = bool(line) and _only_blank_after(lines, line, column, token)
        if at_end or not token:
            plain = f'expected "{want}" before the end of the file'
        else:
            plain = f'expected "{want}" before {token!r}'

    elif "Expected" in msg or "Unexpected" in msg or "Invalid" in msg or "String missing" in msg:
        plain = msg[0].lower() + msg[1:] if msg else "syntax error"
    if plain is None:
        plain = msg or "syntax error"
    return ConfigError(
        plain, path=path, line=line, column=column, token=token, code=code, params=params, detail=msg
    )


def parse_config(
    text: str | bytes, path: str | os.PathLike | None = None, version: TritonVersion | None = None
) -> ModelConfig:
    """Parse config.pbtxt text into ``inference.ModelConfig`` as Triton ``version`` parses it (None: the
    embedded 2.51, tritonclient's own class); raise :class:`ConfigError`."""
    spath = str(path) if path is not None else None
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            line = text[: e.start].count(b"\n") + 1
            raise ConfigError(
                "the file is not UTF-8 text",
                path=spath,
                line=line,
                code="unreadable",
                params={"reason": "encoding"},
            ) from None
    cfg = model_config_class(version)()
    try:
        text_format.Parse(text, cfg)
    except text_format.ParseError as e:
        raise _explain_parse_error(e, text.split("\n"), spath, version or EMBEDDED) from None
    except (ValueError, TypeError, RecursionError, OverflowError) as e:  # anything else protobuf may throw
        raise ConfigError(
            f"cannot read config: {e}", path=spath, code="syntax", params={"detail": str(e)}, detail=str(e)
        ) from None
    return cfg


def load_config(path: str | os.PathLike) -> ModelConfig:
    """Parse a config file, or ``<dir>/config.pbtxt`` when given a model directory.

    Only tests call it (``tests/unit/test_lesson_content.py``); the app reads through :func:`read_model_dir`.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "config.pbtxt"
    try:
        data = p.read_bytes()
    except OSError as e:
        raise ConfigError(
            f"cannot read {p}: {e.strerror or e}", path=str(p), code="unreadable", params={"reason": str(e)}
        ) from None
    return parse_config(data, p)


# ---------------------------------------------------------------------------------------------
# repositories


@dataclass
class ModelEntry:
    """One model directory of a repository, as Triton would see it before loading."""

    name: str  # the directory name (Triton's model name must equal it)
    path: Path
    config_path: Path
    config: ModelConfig | None = None
    error: ConfigError | None = None
    versions: list[int] = field(default_factory=list)  # numeric version directories on disk
    text: str = ""
    locations: InitVar[Locations | None] = None  # computed from ``text`` on first use when not given
    files: dict[int, list[str]] = field(default_factory=dict)  # version -> file names in it
    standalone: bool = False  # a config file outside any model directory (no dir/version rules)
    extra_configs: list[str] = field(default_factory=list)  # configs/*.pbtxt (for --model-config-name)
    _locations: Locations | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self, locations: Locations | None) -> None:
        self._locations = locations if isinstance(locations, Locations) else None

    @property
    def config_name(self) -> str:
        """The name Triton uses: the config's ``name``, or the directory name when empty."""
        if self.config is not None and self.config.name:
            return self.config.name
        return self.name

    @property
    def kind(self) -> str:
        """The platform or backend the config names (``ensemble``, ``python``, ...), ``?`` when none."""
        c = self.config
        return (c.platform or c.backend or "?") if c is not None else "?"

    @property
    def is_ensemble(self) -> bool:
        c = self.config
        return c is not None and (c.platform == ENSEMBLE_PLATFORM or c.HasField("ensemble_scheduling"))

    @property
    def served_versions(self) -> list[int]:
        """Versions Triton would load under the config's version_policy (default: latest 1)."""
        return served_versions(self.config, self.versions)

    def line(self, *path, default: int | None = None) -> int | None:
        return self.locations.line(*path, default=default)


def _get_locations(self: ModelEntry) -> Locations:
    """Field positions in ``text``, computed on first use (only problems and ensembles need them)."""
    if self._locations is None:
        self._locations = locate(self.text) if self.config is not None else Locations()
    return self._locations


def _set_locations(self: ModelEntry, value: Locations | None) -> None:
    self._locations = value


# a property set after the dataclass is built, so that ``locations=`` stays an __init__ argument
ModelEntry.locations = property(_get_locations, _set_locations)  # type: ignore[assignment]


def served_versions(config: ModelConfig | None, versions: list[int]) -> list[int]:
    avail = sorted(v for v in versions if v > 0)
    if config is None or not config.HasField("version_policy"):
        return avail[-1:]
    policy = config.version_policy
    kind = policy.WhichOneof("policy_choice")
    if kind == "all":
        return avail
    if kind == "specific":
        want = set(policy.specific.versions)
        return [v for v in avail if v in want]
    n = policy.latest.num_versions if kind == "latest" else 1
    return avail[-n:] if n > 0 else []


def is_model_dir(path: str | os.PathLike) -> bool:
    """A model folder: it has a config.pbtxt, or (its config left to Triton's auto-complete) a version folder."""
    p = Path(path)
    if (p / "config.pbtxt").is_file():
        return True
    try:
        return any(c.is_dir() and c.name.isdigit() for c in p.iterdir())
    except OSError:
        return False


def read_model_dir(
    path: str | os.PathLike,
    config_name: str | None = None,
    max_bytes: int | None = None,
    version: TritonVersion | None = None,
) -> ModelEntry:
    """Read one model directory (config + version folders); parse errors are kept, not raised.

    ``max_bytes`` refuses a bigger config file (error ``too_large``) without reading it; ``version``: the
    Triton whose schema parses it (None: the embedded 2.51).
    """
    p = Path(path)
    cfg_path = p / "config.pbtxt"
    if config_name:
        alt = p / "configs" / f"{config_name}.pbtxt"
        if alt.is_file():
            cfg_path = alt
    entry = ModelEntry(name=p.name, path=p, config_path=cfg_path)
    try:
        children = sorted(os.scandir(p), key=lambda d: d.name)
    except OSError:
        children = []
    for child in children:
        try:
            child.is_dir()
        except OSError as e:  # a symlink loop: Triton's stat fails, so does the model's load
            entry.error = ConfigError(
                f"failed to stat file {child.path}: {e.strerror or e}", path=child.path, code="unreadable"
            )
            return entry
        if child.is_dir() and child.name.isdigit():
            v = int(child.name)
            entry.versions.append(v)
            try:
                entry.files[v] = sorted(os.listdir(child.path))
            except OSError:
                entry.files[v] = []
        elif child.is_dir() and child.name == "configs":
            entry.extra_configs = sorted(f.name for f in Path(child.path).glob("*.pbtxt"))
    entry.versions.sort()
    try:
        if max_bytes is not None and cfg_path.stat().st_size > max_bytes:
            entry.error = _too_large(cfg_path, max_bytes)
            return entry
        data = cfg_path.read_bytes()
    except FileNotFoundError:
        entry.error = ConfigError(
            "no config.pbtxt in the model directory", path=str(cfg_path), code="no_config", params={}
        )
        return entry
    except OSError as e:
        entry.error = ConfigError(f"cannot read: {e.strerror or e}", path=str(cfg_path), code="unreadable")
        return entry
    _parse_into(entry, data, version)
    return entry


def read_config_file(
    data: bytes, path: str | os.PathLike, max_bytes: int | None = None, version: TritonVersion | None = None
) -> ModelEntry:
    """A config file on its own (an upload, a file outside any model directory), parsed only.

    The entry is ``standalone``; its name is the config's ``name``, else the file name without suffix.
    """
    p = Path(path)
    entry = ModelEntry(name=p.stem, path=p.parent, config_path=p, standalone=True)
    if max_bytes is not None and len(data) > max_bytes:
        entry.error = _too_large(p, max_bytes)
        return entry
    _parse_into(entry, data, version)
    if entry.config is not None and entry.config.name:
        entry.name = entry.config.name
    return entry


def _parse_into(entry: ModelEntry, data: bytes, version: TritonVersion | None = None) -> None:
    entry.text = data.decode("utf-8", errors="replace")
    try:
        entry.config = parse_config(data, entry.config_path, version)
    except ConfigError as e:
        entry.error = e


def _too_large(path: Path, max_bytes: int) -> ConfigError:
    return ConfigError(
        f"the file is over {max_bytes} bytes", path=str(path), code="too_large", params={"limit": max_bytes}
    )


def load_repository(
    path: str | os.PathLike,
    config_name: str | None = None,
    max_bytes: int | None = None,
    version: TritonVersion | None = None,
) -> dict[str, ModelEntry]:
    """All model directories of a repository, keyed by directory name (hidden ones skipped).

    ``config_name`` picks ``configs/<name>.pbtxt`` where a model has one, like Triton's
    ``--model-config-name``; ``max_bytes`` and ``version`` as in :func:`read_model_dir`.
    """
    root = Path(path)
    repo: dict[str, ModelEntry] = {}
    try:
        children = sorted(os.scandir(root), key=lambda d: d.name)
    except OSError as e:
        raise ConfigError(
            f"cannot read repository {root}: {e.strerror or e}", path=str(root), code="unreadable"
        ) from None
    for child in children:
        try:  # Triton stats every entry of the repository; one that cannot be stat'ed fails the whole poll
            os.stat(child.path)
        except OSError as e:
            raise ConfigError(
                f"failed to poll model repository '{root}': failed to stat file {child.path} "
                f"({e.strerror or e})",
                path=child.path,
                code="unreadable",
            ) from None
        if child.is_dir() and not child.name.startswith("."):
            repo[child.name] = read_model_dir(child.path, config_name, max_bytes, version)
    return repo
