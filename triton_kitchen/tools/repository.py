"""The repository browser's library side: models on disk with their configs, and the server's view.

* :func:`server_status` -- is the server up, its version, every model and its readiness;
* :func:`open_repository` -- every model folder of a repository path under :func:`repository_root`;
* :func:`parse_uploaded_configs` -- uploaded ``config.pbtxt`` files, parsed only (never loaded);
* :func:`summary_rows`, :func:`tensors`, :func:`batching`, :func:`instances`, :func:`ensemble_steps` --
  a ModelConfig as a few readable rows (kind, batching, instances, tensors, steps);
* :func:`check_ensemble_text`, :func:`ensemble_dot`, :func:`intermediate_memory` -- the editor's checks.

Files are read by :mod:`triton_kitchen.core.config` (the one reader, into ``config.ModelEntry``); the course's
own repository is listed by :mod:`triton_kitchen.core.catalog`.  Everything here is read-only: nothing is
written to a repository or loaded into a server.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field, fields
from pathlib import Path

from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2

from triton_kitchen.core import catalog, kserve
from triton_kitchen.core.config import (
    ConfigError,
    ModelEntry,
    is_model_dir,
    load_repository,
    locate,
    parse_config,
    read_config_file,
    read_model_dir,
)
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.ensemble import Msg, Problem, autofill
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.server import DEFAULT_REPOSITORY, REPO_ROOT
from triton_kitchen.core.settings import settings
from triton_kitchen.core.tensors import short_name

MAX_CONFIG_BYTES = 256 * 1024
MAX_MODELS = 500


class RepositoryError(KitchenError):
    """A path or file the browser cannot open; ``code`` is a key for the UI's message table."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(code, detail)


@dataclass
class ModelState:
    name: str
    version: str = ""
    state: str = ""
    reason: str = ""

    @property
    def ready(self) -> bool:
        return self.state.upper() == "READY"

    @property
    def on_first_use(self) -> bool:
        """Not loaded (yet, or again), and loaded when a drill first sends to it (``catalog.LOADED_ON_FIRST_USE``):
        the normal state of a drill's model, not a fault. Never loaded, Triton's index gives it no state; unloaded,
        ``UNAVAILABLE`` with the reason ``unloaded``; a failed load keeps Triton's error as its reason."""
        return (
            self.name in catalog.LOADED_ON_FIRST_USE
            and self.state.upper() in ("", "UNAVAILABLE", "LOADING")
            and self.reason in ("", "unloaded")
        )


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


# -- the server ------------------------------------------------------------------------------
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


def scan_names(repo: Path | str) -> list[str]:
    """The model folders of ``repo`` (a ``config.pbtxt`` or a version folder), by name (nothing is parsed)."""
    root = Path(repo)
    if not root.is_dir():
        return []
    return sorted(
        p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and is_model_dir(p)
    )


def autofilled_backend(entry: ModelEntry) -> str | None:
    """The backend that fills in a missing config.pbtxt from the model file when Triton loads the model
    (auto-complete), or None: the folder has a config, or no backend could complete one."""
    if entry.error is None or entry.error.code != "no_config":
        return None
    done = autofill.complete(entry)
    return done.backend if not done.invalid_name and autofill.fills_from_model_file(entry, done) else None


def repository_root() -> Path:
    """The folder whose subfolders a browser user may open: ``$TRITON_KITCHEN_REPOSITORY_ROOT``, else the app's."""
    return Path(settings().repository_root or REPO_ROOT).expanduser().resolve()


def allowed_folder(path: Path | str, root: Path | str | None = None) -> Path:
    """``path`` (relative ones under ``root``) resolved, when it lies under ``root``; else RepositoryError.

    ``root`` defaults to :func:`repository_root`.  Links are resolved first, so none leads out of it.
    """
    base = Path(root).expanduser().resolve() if root is not None else repository_root()
    text = str(path).strip()
    if not text:
        raise RepositoryError("repo_not_found", "no path given")
    folder = (base / Path(text).expanduser()).resolve()
    if not folder.is_relative_to(base):
        raise RepositoryError("repo_outside_root", f"{text} is not under {base}")
    return folder


def open_repository(path: Path | str, root: Path | str | None = None) -> list[ModelEntry]:
    """Every model folder with a config.pbtxt under ``path``, read-only (configs over MAX_CONFIG_BYTES
    are refused unread).  ``path`` must lie under ``root`` (:func:`allowed_folder`); RepositoryError else."""
    folder = allowed_folder(path, root)
    if not folder.is_dir():
        raise RepositoryError("repo_not_found", f"{path} is not a folder")
    try:
        names = scan_names(folder)
    except OSError as exc:
        raise RepositoryError("repo_not_found", str(exc)) from exc
    if not names:
        raise RepositoryError("repo_empty", f"{path} holds no <model>/config.pbtxt")
    return [read_model_dir(folder / n, max_bytes=MAX_CONFIG_BYTES) for n in names[:MAX_MODELS]]


def parse_uploaded_configs(files: list[tuple[str, bytes]]) -> list[ModelEntry]:
    """Uploaded config files -> entries (name from the config, else the file name). Parsed only."""
    return [read_config_file(data, filename, max_bytes=MAX_CONFIG_BYTES) for filename, data in files]


def missing_config_text(entry: ModelEntry, lang: str) -> str:
    """Why a model folder without config.pbtxt will not load (``check``'s explanation), "" when it will or
    when the folder has a config."""
    if entry.error is None or entry.error.code != "no_config":
        return ""
    from triton_kitchen.core.ensemble import validate_model

    errors = [p for p in validate_model(entry.name, {entry.name: entry}) if p.is_error]
    return errors[0].text(lang) if errors else ""


def version_files(entry: ModelEntry) -> str:
    """``1/model.onnx, 2/model.onnx``: what the version folders hold, for one line of text."""
    return ", ".join(f"{v}/{f}" for v in entry.versions for f in entry.files.get(v, [])) or "—"


def error_text(entry: ModelEntry) -> str:
    """The entry's config error in one line (``line:column: message``), "" when it has none (a missing
    config that Triton's auto-complete fills in is not an error)."""
    err = entry.error
    if err is None or autofilled_backend(entry):
        return ""
    where = f"{err.line}:{err.column}: " if err.line and err.column else f"{err.line}: " if err.line else ""
    return where + err.message


# -- readable summaries -----------------------------------------------------------------------
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
                    "data_type": short_name(tensor.data_type),
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
                "kind": e.kind if cfg is not None else (autofill.complete(e).backend or "?"),
                "versions": ", ".join(str(v) for v in e.versions),
                "max_batch_size": b.get("max_batch_size"),
                "dynamic_batching": b.get("dynamic_batching"),
                "instances": instances(cfg) if cfg is not None else "",
                "state": (state.state if state else "") if status is not None else "",
                "error": error_text(e),
            }
        )
    return rows


# -- ensembles: validation, DAG and memory through triton_kitchen.core.config/ensemble/diagram -------
@dataclass
class EnsembleCheck:
    """An edited ensemble config: parsed (or not), its problems, its DAG and a drawing."""

    config: model_config_pb2.ModelConfig | None
    problems: list[Problem] = field(default_factory=list)
    dot: str = ""
    dag: object | None = None

    @property
    def ok(self) -> bool:
        return self.config is not None and not any(p.is_error for p in self.problems)


_TRITON_STEP_INDEX = re.compile(r"\bstep \d+\b")


def _explained(p: Problem, lang: str) -> Problem:
    """``p`` explained in ``lang``; Triton's words stay as Triton wrote them.

    The explanation counts steps from 1, Triton's own message from 0: when Triton's names a step, say so."""
    text = p.text(lang)
    if p.triton_message and _TRITON_STEP_INDEX.search(p.triton_message) and p.params.get("step") is not None:
        text += _msg("triton_counts_from_0", lang)
    values = {f.name: getattr(p, f.name) for f in fields(p)}
    return Problem(**{**values, "message": text, "msg": None})


def _msg(key: str, lang: str, **args) -> str:
    """The ``[problem]`` table's ``key`` in ``lang``."""
    return Msg(key, args).render(lang)


def check_ensemble_text(
    text: str, name: str = catalog.IMAGE_CLASSIFIER, repo: Path | str = DEFAULT_REPOSITORY, lang: str = "en"
) -> EnsembleCheck:
    """Check an edited config of model ``name`` as if it replaced that model's file in ``repo``.

    Triton's rules (triton_kitchen.core.ensemble) against the real step models; nothing is written or loaded.
    The explanations are in ``lang`` (the ``[problem]`` tables of lessons/<lang>/ui.toml).
    """
    from triton_kitchen.core import ensemble
    from triton_kitchen.tools import diagram

    if len(text.encode("utf-8", errors="replace")) > MAX_CONFIG_BYTES:
        too_large = _msg("config_too_large", lang, limit=MAX_CONFIG_BYTES)
        return EnsembleCheck(None, [Problem("error", "config_too_large", too_large)])
    models = load_repository(repo)
    base = models.get(name)
    folder = Path(repo) / name
    try:
        cfg = parse_config(text, path=f"{name}/config.pbtxt")
    except ConfigError as exc:
        explained = ensemble.config_error_msg(exc).render(lang)
        problem = Problem("error", exc.code, explained, exc.params, exc.line, exc.triton_message)
        return EnsembleCheck(None, [problem])
    entry = ModelEntry(
        name=name,
        path=base.path if base else folder,
        config_path=base.config_path if base else folder / "config.pbtxt",
        config=cfg,
        versions=list(base.versions) if base else [1],
        text=text,
        locations=locate(text),
        files=dict(base.files) if base else {1: []},
    )
    models[name] = entry
    check = EnsembleCheck(cfg, [_explained(p, lang) for p in ensemble.validate_model(name, models)])
    if entry.is_ensemble:
        try:
            check.dag = ensemble.build_dag(name, models, validate=False)
            check.dot = diagram.to_dot(check.dag, lang=lang)
        except (ConfigError, KeyError, ValueError) as exc:  # a graph too broken to draw
            cannot_draw = _msg("cannot_draw", lang, error=exc)
            check.problems.append(Problem("warning", "cannot_draw", cannot_draw))
    return check


def ensemble_dot(name: str, repo: Path | str = DEFAULT_REPOSITORY, lang: str = "en") -> str:
    """DOT drawing of one of the repository's ensembles, from its config."""
    from triton_kitchen.core import ensemble
    from triton_kitchen.tools import diagram

    return diagram.to_dot(ensemble.build_dag(name, repo, validate=False), lang=lang)


def intermediate_memory(
    name: str, batch_size: int = 1, in_flight: int = 1, repo: Path | str = DEFAULT_REPOSITORY
) -> list[dict]:
    """Each intermediate tensor of an ensemble: producer, consumers, type, dims and bytes (computed
    from the configs): per request of ``batch_size`` and for ``in_flight`` such requests."""
    from triton_kitchen.core import ensemble

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
                "data_type": short_name(tensor.data_type),
                "dims": list(tensor.dims or []),
                "bytes_per_request": per,
                "bytes_in_flight": per * in_flight if per is not None else None,
            }
        )
    return rows
