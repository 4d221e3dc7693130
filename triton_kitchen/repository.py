"""The repository browser's library side: models on disk with their configs, and the server's view.

* :func:`server_status` -- is the server up, its version, every model and its readiness;
* :func:`scan_repository` -- every model folder of a repository path: parsed config, versions on disk;
* :func:`parse_uploaded_configs` -- uploaded ``config.pbtxt`` files, parsed only (never loaded);
* :func:`config_summary` -- a ModelConfig as a few readable rows (kind, batching, instances, tensors).

Everything here is read-only: nothing is written to a repository or loaded into a server.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2

from triton_kitchen import kserve
from triton_kitchen.server import DEFAULT_REPOSITORY, Endpoint

MAX_CONFIG_BYTES = 256 * 1024
MAX_MODELS = 500


class RepositoryError(ValueError):
    """A path or file the browser cannot open; ``code`` is a key for the UI's message table."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


@dataclass
class ModelState:
    name: str
    version: str = ""
    state: str = ""
    reason: str = ""

    @property
    def ready(self) -> bool:
        return self.state.upper() == "READY"


@dataclass
class ServerStatus:
    up: bool
    url: str
    version: str = ""
    extensions: list[str] = field(default_factory=list)
    models: list[ModelState] = field(default_factory=list)
    error: str = ""
    checked_ms: float = 0.0

    def state_of(self, model: str) -> ModelState | None:
        for m in self.models:
            if m.name == model:
                return m
        return None


@dataclass
class ModelEntry:
    """One model folder: its config (parsed, or the parse error), versions on disk."""

    name: str
    path: str
    config_text: str = ""
    config: model_config_pb2.ModelConfig | None = None
    error: str = ""
    error_line: int | None = None
    versions: list[int] = field(default_factory=list)
    extra_configs: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        if self.config is None:
            return "?"
        return self.config.platform or self.config.backend or "?"

    @property
    def is_ensemble(self) -> bool:
        return self.config is not None and self.config.platform == "ensemble"


# -- the server ------------------------------------------------------------------------------
def probe_live(http_url: str, timeout: float = 1.0) -> bool:
    """True when a KServe-v2 server answers ``/v2/health/live`` (:func:`kserve.live`, the app's one probe)."""
    return kserve.live(http_url, timeout)


def server_status(
    endpoint: Endpoint, timeout: float = 1.5, known_models: list[str] | tuple[str, ...] | None = None
) -> ServerStatus:
    """Up or down, Triton's version, and every model with its state. When the repository index is closed
    to this client, the readiness of ``known_models`` (by default the course repository's models)."""
    t0 = time.perf_counter()
    status = ServerStatus(up=False, url=endpoint.http_url)
    if not kserve.live(endpoint, timeout=timeout):
        status.error = f"no KServe-v2 server answers at http://{endpoint.http_url}/v2/health/live"
        status.checked_ms = (time.perf_counter() - t0) * 1000
        return status
    status.up = True
    try:
        meta = kserve.server_metadata(endpoint, timeout=timeout * 4)
        status.version = str(meta.get("version", ""))
        status.extensions = list(meta.get("extensions", []))
        try:
            index = kserve.repository_index(endpoint, timeout=timeout * 4)
            status.models = [
                ModelState(
                    name=str(m.get("name", "")),
                    version=str(m.get("version", "")),
                    state=str(m.get("state", "")),
                    reason=str(m.get("reason", "")),
                )
                for m in index
            ]
        except kserve.KServeError as exc:
            if exc.code == "connection":
                raise
            # A remote server may restrict the repository API: ask each model we know about instead.
            names = scan_names(DEFAULT_REPOSITORY) if known_models is None else known_models
            status.models = [
                ModelState(name, state="READY" if _ready(endpoint, name, timeout) else "UNAVAILABLE")
                for name in sorted(names)
            ]
    except kserve.KServeError as exc:
        status.error = exc.detail
    status.models.sort(key=lambda m: m.name)
    status.checked_ms = (time.perf_counter() - t0) * 1000
    return status


def _ready(endpoint: Endpoint, name: str, timeout: float = 1.5) -> bool:
    return kserve.model_ready(endpoint, name, timeout)


def loaded_config(endpoint: Endpoint, model: str) -> dict:
    """The config Triton actually loaded (defaults filled in), as JSON (raises kserve.KServeError)."""
    return kserve.model_config(endpoint, model)


def loaded_config_text(endpoint: Endpoint, model: str) -> str:
    """The loaded config in protobuf text format, for showing beside the file."""
    msg = json_format.ParseDict(
        loaded_config(endpoint, model), model_config_pb2.ModelConfig(), ignore_unknown_fields=True
    )
    return text_format.MessageToString(msg)


# -- the files -------------------------------------------------------------------------------
def parse_config_text(text: str) -> model_config_pb2.ModelConfig:
    """config.pbtxt text -> ModelConfig; raises RepositoryError("bad_config") with the line number."""
    try:
        from triton_kitchen import config as config_module  # the project's parser, when present

        parse = getattr(config_module, "parse_config", None) or getattr(config_module, "parse", None)
    except ImportError:
        parse = None
    if parse is not None:
        try:
            parsed = parse(text)
            cfg = getattr(parsed, "config", parsed)
            if isinstance(cfg, model_config_pb2.ModelConfig) or hasattr(cfg, "ensemble_scheduling"):
                out = model_config_pb2.ModelConfig()
                out.ParseFromString(cfg.SerializeToString())
                return out
        except Exception as exc:  # noqa: BLE001 - any parser failure becomes a readable message
            raise RepositoryError("bad_config", str(exc)) from exc
    try:
        return text_format.Parse(text, model_config_pb2.ModelConfig())
    except text_format.ParseError as exc:
        raise RepositoryError("bad_config", str(exc)) from exc


def scan_names(repo: Path | str) -> list[str]:
    root = Path(repo)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (p / "config.pbtxt").is_file())


def _versions(folder: Path) -> list[int]:
    return sorted(int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit())


def read_model(folder: Path) -> ModelEntry:
    entry = ModelEntry(name=folder.name, path=str(folder))
    cfg_path = folder / "config.pbtxt"
    try:
        entry.versions = _versions(folder)
        if (folder / "configs").is_dir():
            entry.extra_configs = sorted(p.name for p in (folder / "configs").glob("*.pbtxt"))
        if cfg_path.stat().st_size > MAX_CONFIG_BYTES:
            raise RepositoryError("config_too_large", f"{cfg_path}: over {MAX_CONFIG_BYTES} bytes")
        entry.config_text = cfg_path.read_text(encoding="utf-8", errors="replace")
        entry.config = parse_config_text(entry.config_text)
    except RepositoryError as exc:
        entry.error = exc.detail
        entry.error_line = _line_of(exc.detail)
    except OSError as exc:
        entry.error = str(exc)
    return entry


def scan_repository(repo: Path | str = DEFAULT_REPOSITORY) -> list[ModelEntry]:
    """Every model folder with a config.pbtxt, read-only. Raises RepositoryError for a bad path."""
    root = Path(str(repo)).expanduser()
    if not str(repo).strip():
        raise RepositoryError("repo_not_found", "no path given")
    if not root.exists():
        raise RepositoryError("repo_not_found", f"{root} does not exist")
    if not root.is_dir():
        raise RepositoryError("repo_not_found", f"{root} is not a folder")
    try:
        names = scan_names(root)
    except OSError as exc:
        raise RepositoryError("repo_not_found", str(exc)) from exc
    if not names:
        raise RepositoryError("repo_empty", f"{root} holds no <model>/config.pbtxt")
    return [read_model(root / n) for n in names[:MAX_MODELS]]


def parse_uploaded_configs(files: list[tuple[str, bytes]]) -> list[ModelEntry]:
    """Uploaded config files -> entries (name from the config, else the file name). Parsed only."""
    entries = []
    for filename, data in files:
        entry = ModelEntry(name=Path(filename).stem, path=filename)
        if len(data) > MAX_CONFIG_BYTES:
            entry.error = f"{filename}: {len(data)} bytes is over the {MAX_CONFIG_BYTES}-byte limit"
            entries.append(entry)
            continue
        try:
            entry.config_text = data.decode("utf-8")
            entry.config = parse_config_text(entry.config_text)
            entry.name = entry.config.name or entry.name
        except UnicodeDecodeError:
            entry.error = f"{filename}: not UTF-8 text"
        except RepositoryError as exc:
            entry.error = exc.detail
            entry.error_line = _line_of(exc.detail)
        entries.append(entry)
    return entries


def _line_of(message: str) -> int | None:
    found = re.search(r"(?:^|\D)(\d+):(\d+) ?:", message)
    return int(found.group(1)) if found else None


# -- readable summaries -----------------------------------------------------------------------
def _dtype(value: int) -> str:
    return model_config_pb2.DataType.Name(value).removeprefix("TYPE_")


def tensors(cfg: model_config_pb2.ModelConfig) -> list[dict]:
    """Inputs and outputs as rows: direction, name, data type, dims, and the shape a client sends."""
    rows = []
    for direction, items in (("input", cfg.input), ("output", cfg.output)):
        for tensor in items:
            dims = list(tensor.dims)
            shape = (["N"] if cfg.max_batch_size > 0 else []) + [str(d) for d in dims]
            rows.append(
                {
                    "direction": direction,
                    "name": tensor.name,
                    "data_type": _dtype(tensor.data_type),
                    "dims": json.dumps(dims),
                    "request_shape": "[" + ", ".join(shape) + "]",
                    "optional": bool(getattr(tensor, "optional", False)),
                }
            )
    return rows


def batching(cfg: model_config_pb2.ModelConfig) -> dict:
    """Batching settings: max_batch_size, dynamic batching on/off, preferred sizes, queue delay."""
    dyn = cfg.dynamic_batching if cfg.HasField("dynamic_batching") else None
    return {
        "max_batch_size": int(cfg.max_batch_size),
        "dynamic_batching": dyn is not None,
        "preferred_batch_size": list(dyn.preferred_batch_size) if dyn else [],
        "max_queue_delay_us": int(dyn.max_queue_delay_microseconds) if dyn else 0,
        "decoupled": bool(cfg.model_transaction_policy.decoupled),
    }


def instances(cfg: model_config_pb2.ModelConfig) -> str:
    parts = []
    for group in cfg.instance_group:
        kind = model_config_pb2.ModelInstanceGroup.Kind.Name(group.kind).removeprefix("KIND_")
        parts.append(f"{group.count or 1} × {kind}")
    return ", ".join(parts)


def ensemble_steps(cfg: model_config_pb2.ModelConfig) -> list[dict]:
    rows = []
    for i, step in enumerate(cfg.ensemble_scheduling.step, start=1):
        rows.append(
            {
                "step": i,
                "model_name": step.model_name,
                "model_version": int(step.model_version),
                "input_map": ", ".join(f"{k} ← {v}" for k, v in sorted(step.input_map.items())),
                "output_map": ", ".join(f"{k} → {v}" for k, v in sorted(step.output_map.items())),
            }
        )
    return rows


def summary_rows(entries: list[ModelEntry], status: ServerStatus | None = None) -> list[dict]:
    """One row per model for the overview table (state from the server when given)."""
    rows = []
    for e in entries:
        cfg = e.config
        b = batching(cfg) if cfg is not None else {}
        state = status.state_of(e.name) if status is not None else None
        rows.append(
            {
                "model": e.name,
                "kind": e.kind,
                "versions": ", ".join(str(v) for v in e.versions),
                "max_batch_size": b.get("max_batch_size"),
                "dynamic_batching": b.get("dynamic_batching"),
                "instances": instances(cfg) if cfg is not None else "",
                "state": (state.state if state else "") if status is not None else "",
                "error": e.error,
            }
        )
    return rows


# -- ensembles: validation, DAG and memory through triton_kitchen.config/ensemble/diagram -------
@dataclass
class Problem:
    severity: str  # "error" | "warning"
    message: str  # the explanation, in the language asked for
    line: int | None = None
    code: str = ""
    triton: str | None = None  # Triton's own wording, where known


@dataclass
class EnsembleCheck:
    """An edited ensemble config: parsed (or not), its problems, its DAG and a drawing."""

    config: model_config_pb2.ModelConfig | None
    problems: list[Problem] = field(default_factory=list)
    dot: str = ""
    dag: object | None = None

    @property
    def ok(self) -> bool:
        return self.config is not None and not any(p.severity == "error" for p in self.problems)


_TRITON_STEP_INDEX = re.compile(r"\bstep \d+\b")


def _problem(p, lang: str) -> Problem:
    """ensemble.Problem -> the app's, explained in ``lang``; Triton's words stay as Triton wrote them.

    The explanation counts steps from 1, Triton's own message from 0: when Triton's names a step, say so."""
    text = p.text(lang)
    if p.triton_message and _TRITON_STEP_INDEX.search(p.triton_message) and p.params.get("step") is not None:
        text += _msg("triton_counts_from_0", lang)
    return Problem(p.severity, text, p.line, p.code, p.triton_message)


def _msg(key: str, lang: str, **args) -> str:
    from triton_kitchen.ensemble import Msg

    return Msg(key, args).render(lang)


def check_ensemble_text(
    text: str, name: str = "image_classifier", repo: Path | str = DEFAULT_REPOSITORY, lang: str = "en"
) -> EnsembleCheck:
    """Check an edited config of model ``name`` as if it replaced that model's file in ``repo``.

    Triton's rules (triton_kitchen.ensemble) against the real step models; nothing is written or loaded.
    The explanations are in ``lang`` (the ``[problem]`` tables of lessons/<lang>/ui.toml).
    """
    from triton_kitchen import config as cfgmod
    from triton_kitchen import diagram, ensemble

    if len(text.encode("utf-8", errors="replace")) > MAX_CONFIG_BYTES:
        return EnsembleCheck(
            None, [Problem("error", _msg("config_too_large", lang, limit=MAX_CONFIG_BYTES), None, "config_too_large")]
        )
    models = cfgmod.load_repository(repo)
    base = models.get(name)
    folder = Path(repo) / name
    try:
        cfg = cfgmod.parse_config(text, path=f"{name}/config.pbtxt")
    except cfgmod.ConfigError as exc:
        text = ensemble.config_error_msg(exc).render(lang)
        return EnsembleCheck(None, [Problem("error", text, exc.line, exc.code, exc.triton_message)])
    entry = cfgmod.ModelEntry(
        name=name,
        path=base.path if base else folder,
        config_path=base.config_path if base else folder / "config.pbtxt",
        config=cfg,
        versions=list(base.versions) if base else [1],
        text=text,
        locations=cfgmod.locate(text),
        files=dict(base.files) if base else {1: []},
    )
    models[name] = entry
    check = EnsembleCheck(cfg, [_problem(p, lang) for p in ensemble.validate_model(name, models)])
    if entry.is_ensemble:
        try:
            check.dag = ensemble.build_dag(name, models, validate=False)
            check.dot = diagram.to_dot(check.dag, lang=lang)
        except (cfgmod.ConfigError, KeyError, ValueError) as exc:  # a graph too broken to draw
            check.problems.append(Problem("warning", _msg("cannot_draw", lang, error=exc)))
    return check


def ensemble_dot(name: str, repo: Path | str = DEFAULT_REPOSITORY, lang: str = "en") -> str:
    """DOT drawing of one of the repository's ensembles, from its config."""
    from triton_kitchen import diagram, ensemble

    return diagram.to_dot(ensemble.build_dag(name, repo, validate=False), lang=lang)


def intermediate_memory(
    name: str, batch_size: int = 1, in_flight: int = 1, repo: Path | str = DEFAULT_REPOSITORY
) -> list[dict]:
    """Each intermediate tensor of an ensemble: producer, consumers, type, dims and bytes (computed
    from the configs): per request of ``batch_size`` and for ``in_flight`` such requests."""
    from triton_kitchen import ensemble

    dag = ensemble.build_dag(name, repo, validate=False)
    estimate = ensemble.inflight_memory(dag, batch_size=batch_size, n_in_flight=in_flight)
    rows = []
    for tensor in dag.tensors:
        if tensor.name not in estimate.per_tensor:
            continue
        per = estimate.per_tensor[tensor.name]
        rows.append(
            {
                "tensor": tensor.name,
                "producer": tensor.producer,
                "consumers": list(tensor.consumers),
                "data_type": _dtype_str(tensor.data_type),
                "dims": list(tensor.dims or []),
                "bytes_per_request": per,
                "bytes_in_flight": per * in_flight if per is not None else None,
            }
        )
    return rows


def _dtype_str(value) -> str:
    if value is None:
        return "?"
    return str(value).removeprefix("TYPE_")


control_api_refused = kserve.control_api_refused  # its old home; the words live in kserve
