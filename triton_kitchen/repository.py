"""The repository browser's library side: models on disk with their configs, and the server's view.

* :func:`server_status` -- is the server up, its version, every model and its readiness;
* :func:`scan_repository` -- every model folder of a repository path: parsed config, versions on disk;
* :func:`parse_uploaded_configs` -- uploaded ``config.pbtxt`` files, parsed only (never loaded);
* :func:`config_summary` -- a ModelConfig as a few readable rows (kind, batching, instances, tensors).

Everything here is read-only: nothing is written to a repository or loaded into a server.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2
from tritonclient.utils import InferenceServerException

from triton_kitchen.server import DEFAULT_REPOSITORY, Endpoint, probe_kserve

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
def server_status(endpoint: Endpoint, timeout: float = 1.5) -> ServerStatus:
    """Up or down, Triton's version, and every model with its state (readiness when the index is closed)."""
    from triton_kitchen.clients import http_client

    t0 = time.perf_counter()
    status = ServerStatus(up=False, url=endpoint.http_url)
    if not probe_kserve(endpoint.http_url, timeout=timeout):
        status.error = f"no KServe-v2 server answers at http://{endpoint.http_url}/v2/health/ready"
        status.checked_ms = (time.perf_counter() - t0) * 1000
        return status
    status.up = True
    try:
        client = http_client(endpoint, timeout=timeout * 4)
        meta = client.get_server_metadata()
        status.version = str(meta.get("version", ""))
        status.extensions = list(meta.get("extensions", []))
        try:
            index = client.get_model_repository_index(headers=endpoint.headers or None)
            status.models = [
                ModelState(
                    name=str(m.get("name", "")),
                    version=str(m.get("version", "")),
                    state=str(m.get("state", "")),
                    reason=str(m.get("reason", "")),
                )
                for m in index
            ]
        except InferenceServerException:
            # A remote server may restrict the repository API: ask each model we know about instead.
            status.models = [
                ModelState(name, state="READY" if _ready(client, name) else "UNAVAILABLE")
                for name in sorted(scan_names(DEFAULT_REPOSITORY))
            ]
    except (InferenceServerException, OSError, ValueError) as exc:
        status.error = str(exc)
    status.models.sort(key=lambda m: m.name)
    status.checked_ms = (time.perf_counter() - t0) * 1000
    return status


def _ready(client, name: str) -> bool:
    try:
        return bool(client.is_model_ready(name))
    except (InferenceServerException, OSError):
        return False


def loaded_config(endpoint: Endpoint, model: str) -> dict:
    """The config Triton actually loaded (defaults filled in), as JSON."""
    from triton_kitchen.clients import http_client

    return http_client(endpoint).get_model_config(model)


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
    import re

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


# -- ensembles drawn from configs (a small fallback; triton_kitchen.ensemble/diagram do it fully) ---
DTYPE_BYTES = {
    "BOOL": 1, "UINT8": 1, "INT8": 1, "UINT16": 2, "INT16": 2, "FP16": 2, "BF16": 2,
    "UINT32": 4, "INT32": 4, "FP32": 4, "UINT64": 8, "INT64": 8, "FP64": 8,
}  # fmt: skip


def intermediate_tensors(ensemble: model_config_pb2.ModelConfig, models: dict[str, ModelEntry]) -> list[dict]:
    """Each tensor an ensemble step produces: producer, consumers, type, dims and bytes per request
    and per full batch (computed from the step models' configs; STRING has no fixed size)."""
    outputs = {o.name for o in ensemble.output}
    rows: dict[str, dict] = {}
    for step in ensemble.ensemble_scheduling.step:
        entry = models.get(step.model_name)
        step_outputs = {o.name: o for o in entry.config.output} if entry and entry.config else {}
        for key, value in step.output_map.items():
            spec = step_outputs.get(key)
            dtype = _dtype(spec.data_type) if spec is not None else "?"
            dims = list(spec.dims) if spec is not None else []
            size = DTYPE_BYTES.get(dtype)
            per_request = None
            if size is not None and dims and all(d > 0 for d in dims):
                per_request = size
                for d in dims:
                    per_request *= d
            rows[value] = {
                "tensor": value,
                "producer": step.model_name,
                "consumers": [],
                "data_type": dtype,
                "dims": dims,
                "bytes_per_request": per_request,
                "bytes_per_batch": per_request * max(1, ensemble.max_batch_size) if per_request else None,
                "is_output": value in outputs,
            }
    for step in ensemble.ensemble_scheduling.step:
        for value in step.input_map.values():
            if value in rows:
                rows[value]["consumers"].append(step.model_name)
    return list(rows.values())


def simple_dot(ensemble: model_config_pb2.ModelConfig) -> str:
    """A Graphviz DOT drawing of an ensemble: inputs, steps and tensors as edges."""
    lines = [
        "digraph ensemble {",
        "  rankdir=LR; node [fontname=Helvetica, fontsize=11]; edge [fontname=Helvetica, fontsize=9];",
    ]
    producers: dict[str, str] = {}
    for o in ensemble.input:
        producers[o.name] = f"in_{o.name}"
        lines.append(f'  "in_{o.name}" [label="{o.name}", shape=cds, style=filled, fillcolor="#dbeafe"];')
    for i, step in enumerate(ensemble.ensemble_scheduling.step):
        lines.append(
            f'  "s{i}" [label="{step.model_name}", shape=box, style="rounded,filled", fillcolor="#e8f5d0"];'
        )
        for value in step.output_map.values():
            producers[value] = f"s{i}"
    for o in ensemble.output:
        lines.append(f'  "out_{o.name}" [label="{o.name}", shape=cds, style=filled, fillcolor="#fde68a"];')
        if o.name in producers:
            lines.append(f'  "{producers[o.name]}" -> "out_{o.name}" [label="{o.name}"];')
    for i, step in enumerate(ensemble.ensemble_scheduling.step):
        for key, value in step.input_map.items():
            src = producers.get(value)
            if src:
                lines.append(f'  "{src}" -> "s{i}" [label="{value} → {key}"];')
    lines.append("}")
    return "\n".join(lines)


@dataclass
class Problem:
    severity: str  # "error" | "warning"
    message: str
    line: int | None = None


@dataclass
class EnsembleCheck:
    """An edited ensemble config: parsed (or not), its problems, and a drawing."""

    config: model_config_pb2.ModelConfig | None
    problems: list[Problem] = field(default_factory=list)
    dot: str = ""

    @property
    def ok(self) -> bool:
        return self.config is not None and not any(p.severity == "error" for p in self.problems)


def _line_containing(text: str, needle: str) -> int | None:
    for n, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return n
    return None


def check_ensemble_text(text: str, repo: Path | str = DEFAULT_REPOSITORY) -> EnsembleCheck:
    """Parse and check an edited ensemble config against the step models of ``repo``.

    Uses the project's validator (``triton_kitchen.ensemble``) when it is installed; otherwise a
    smaller set of Triton's rules: known step models, model_version, map keys against the step
    models' tensors, one producer per tensor, every input written and every output produced.
    """
    try:
        cfg = parse_config_text(text)
    except RepositoryError as exc:
        return EnsembleCheck(None, [Problem("error", exc.detail, _line_of(exc.detail))])
    check = EnsembleCheck(cfg)
    add = check.problems.append
    if cfg.platform != "ensemble":
        add(Problem("error", 'platform is not "ensemble"', _line_containing(text, "platform")))
        return check
    models = {e.name: e for e in scan_repository(repo)}
    produced: dict[str, str] = {i.name: "<ensemble input>" for i in cfg.input}
    for step in cfg.ensemble_scheduling.step:
        for value in step.output_map.values():
            if value in produced:
                add(
                    Problem(
                        "error",
                        f"ensemble tensor '{value}' can appear in an output map only once for ensemble '{cfg.name}'",
                        _line_containing(text, f'value: "{value}"'),
                    )
                )
            produced[value] = step.model_name
    for step in cfg.ensemble_scheduling.step:
        line = _line_containing(text, f'model_name: "{step.model_name}"')
        entry = models.get(step.model_name)
        if entry is None or entry.config is None:
            add(Problem("error", f"step model '{step.model_name}' is not in the repository", line))
            continue
        if step.model_version == 0:
            add(
                Problem(
                    "error",
                    f"model_version of step '{step.model_name}' is 0 (omitted means 0, not latest): "
                    "required version 0 is not loaded — write -1",
                    line,
                )
            )
        step_in = {i.name for i in entry.config.input}
        step_out = {o.name for o in entry.config.output}
        for key, value in step.input_map.items():
            if key not in step_in:
                add(
                    Problem(
                        "error",
                        f"in ensemble {cfg.name}, input '{key}' is not an input of model '{step.model_name}' "
                        f"(its inputs: {', '.join(sorted(step_in))}); the key of input_map is the step model's tensor",
                        _line_containing(text, f'key: "{key}"'),
                    )
                )
            if value not in produced:
                add(
                    Problem(
                        "error",
                        f"in ensemble {cfg.name}, ensemble tensor '{value}' read by '{step.model_name}' is not written",
                        _line_containing(text, f'value: "{value}"'),
                    )
                )
        for required in sorted(
            step_in - set(step.input_map) - {i.name for i in entry.config.input if i.optional}
        ):
            add(
                Problem(
                    "error",
                    f"in ensemble {cfg.name}, input {required} in model {step.model_name} is not mapped "
                    "to any ensemble tensors",
                    line,
                )
            )
        for key in step.output_map:
            if key not in step_out:
                add(
                    Problem(
                        "error",
                        f"in ensemble {cfg.name}, output '{key}' is not an output of model '{step.model_name}'",
                        _line_containing(text, f'key: "{key}"'),
                    )
                )
        if entry.config.max_batch_size > 0 and entry.config.max_batch_size < cfg.max_batch_size:
            add(
                Problem(
                    "error",
                    f"step model '{step.model_name}' has max_batch_size {entry.config.max_batch_size}, "
                    f"less than the ensemble's {cfg.max_batch_size}",
                    line,
                )
            )
    for out in cfg.output:
        if out.name not in produced:
            add(Problem("error", f"ensemble output '{out.name}' is not written by any step", None))
    for field_name in ("dynamic_batching", "optimization"):
        if cfg.HasField(field_name):
            add(Problem("error", f"an ensemble cannot have {field_name}", _line_containing(text, field_name)))
    if len(cfg.instance_group) or len(cfg.model_warmup):
        add(Problem("error", "an ensemble cannot have instance_group or model_warmup", None))
    check.dot = simple_dot(cfg)
    return check
