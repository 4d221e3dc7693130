"""Triton's own config QA suite (``qa/L0_model_config``) of each version ``check`` knows, laid out as that
version's ``test.sh`` does, so that ``check --triton-version X.Y`` can be compared with the verdict and the log
line Triton's log must hold.

The suites are reference data outside this repository (``../shared/triton-qa/L0_model_config-<X.Y>/``, or
``$TRITON_QA_DIR``); they are read, never copied in.  Where ``test.sh`` copies a model binary from a path that is
not public, an empty placeholder file (or folder) of the same name stands in; where it builds a config from a
base config that is not in the snapshot (2.72's ``model_metrics`` and ``custom_parameters`` cases prepend a QA
model's config to ``partial.pbtxt``), a stand-in base of the same kind is used (:data:`BASE_CONFIGS`).  Each
:class:`QaCase` is one server run of ``test.sh``: a ``noautofill_platform`` case once per platform.  Cases whose
verdict or expected text comes from a backend reading the model file, running model code, or from the server's
command line are out of scope (:data:`OUT_OF_SCOPE`), with the reason.

    for version in VERSIONS: suite = Suite.of(version); cases(suite)
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QA_ROOT = Path(os.environ.get("TRITON_QA_DIR", ROOT.parent / "shared" / "triton-qa"))
VERSIONS = ("2.51", "2.72")  # the suites in the snapshot: Triton v2.51.0 and r26.08 (2.72.0)

# test.sh: TRIALS, the platforms each noautofill_platform case is run with (2.72's has no TensorFlow: the
# backend left the containers after 25.02)
TRIALS_BY_VERSION = {
    "2.51": (
        "tensorflow_savedmodel",
        "tensorflow_graphdef",
        "tensorrt_plan",
        "onnxruntime_onnx",
        "pytorch_libtorch",
    ),
    "2.72": ("tensorrt_plan", "onnxruntime_onnx", "pytorch_libtorch"),
}


@dataclass(frozen=True)
class Suite:
    """One version's suite: its folder, test.sh's TRIALS and the python model test.sh copies in."""

    version: str
    root: Path
    trials: tuple[str, ...]
    python_auto_complete: Path

    @classmethod
    def of(cls, version: str) -> Suite:
        return cls(
            version,
            QA_ROOT / f"L0_model_config-{version}",
            TRIALS_BY_VERSION[version],
            QA_ROOT / f"python_models-{version}" / "auto_complete" / "model.py",
        )


SUITE = QA_ROOT / "L0_model_config-2.51"  # the embedded server's suite
TRIALS = TRIALS_BY_VERSION["2.51"]

# how Triton's log line names an INVALID_ARG status before its message
STATUS_PREFIX = "Invalid argument: "

# the GPUs of the machine test.sh runs on (CUDA_VISIBLE_DEVICES=0): one, id 0
QA_GPUS = 1

# group (a folder of the suite, or one case) -> why check cannot give Triton's verdict there
OUT_OF_SCOPE = {
    "autofill_noplatform/onnx": "the verdict comes from the ONNX Runtime backend reading model.onnx",
    "autofill_noplatform/openvino": "the verdict comes from the OpenVINO backend reading model.xml",
    "autofill_noplatform/python": "the verdict comes from running the model's auto_complete_config in the Python backend",
    "autofill_noplatform/pytorch": "the verdict comes from the PyTorch backend (its own input/output rules and model.pt)",
    "autofill_noplatform/tensorflow_savedmodel": "the verdict comes from the TensorFlow backend reading the SavedModel",
    "autofill_noplatform/tensorrt": "the verdict comes from the TensorRT backend reading model.plan",
    "cli_messages": "these test tritonserver's command-line flags, not a model configuration",
    # 2.72 only: custom_parameters/tensorrt (test.sh appends partial.pbtxt to a TensorRT plan's config)
    "custom_parameters/tensorrt/valid/allocation_strategy_value_1": "the expected line is the TensorRT backend's "
    "own log of execution_context_allocation_strategy, written when it loads model.plan",
    "custom_parameters/tensorrt/valid/allocation_strategy_value_2": "the expected line is the TensorRT backend's "
    "own log of execution_context_allocation_strategy, written when it loads model.plan",
    "custom_parameters/tensorrt/invalid/allocation_strategy_invalid_value": "the refusal is the TensorRT backend's "
    "(it reads execution_context_allocation_strategy when it creates an instance from model.plan)",
}

# test.sh builds these configs as "cat BASE partial.pbtxt": BASE is a QA model's config that the snapshot does
# not hold (qa/python_models/async_execute_decouple, qa_model_repository/plan_float32_float32_float32). A
# stand-in of the same kind: the python backend, decoupled, one input and output; a TensorRT plan with two of
# each (test.sh then drops its version_policy and label_filename lines and renames it, as here).
BASE_CONFIGS = {
    "model_metrics": (
        'backend: "python"\nmax_batch_size: 8\n'
        'input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
        'output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
        "instance_group [{ kind: KIND_CPU }]\nmodel_transaction_policy { decoupled: True }\n"
    ),
    "custom_parameters": (
        'name: "plan_float32_float32_float32"\nplatform: "tensorrt_plan"\nmax_batch_size: 8\n'
        "version_policy: { latest { num_versions: 1 }}\n"
        'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, '
        '{ name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]\n'
        'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ]\nlabel_filename: "output0_labels.txt"\n },\n'
        '{ name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]\n'
    ),
}


@dataclass
class QaCase:
    """One run of test.sh: a repository laid out under ``models/``, the model(s) to check, the verdict."""

    id: str  # e.g. "noautofill_platform/reshape_variable0@onnxruntime_onnx"
    source: Path  # the suite's folder
    loads: bool  # True: Triton loads it (a *_success case); False: Triton refuses it
    expected: list[str] = field(default_factory=list)  # grep patterns, one per expected* file
    repository: bool = False  # the folder is a whole repository (check every model) rather than one model
    platform: str | None = None  # noautofill_platform: the platform test.sh writes into the config
    autofill: bool = True  # False: --strict-model-config=true / --disable-auto-complete-config
    add_version: bool = False  # the variant with a version folder added (only the config rule at fault)
    out_of_scope: str | None = None
    suite: Suite = field(default_factory=lambda: Suite.of("2.51"))
    warns: bool = False  # it loads, and test.sh greps a warning (W...) line for ``expected``
    base: str | None = None  # test.sh writes config.pbtxt as a base config + partial.pbtxt (BASE_CONFIGS key)

    def matches(self, text: str | None) -> bool:
        """Whether Triton's wording (any expected* grep pattern, as test.sh greps its log) is in ``text``, as
        Triton logs it: after the status code's name ("Invalid argument: ", for a config rule)."""
        if not text:
            return False
        logged = f"{STATUS_PREFIX}{text}"
        return any(re.search(_grep_to_python(p), logged) for p in self.expected)

    @property
    def wording_in_scope(self) -> bool:
        """A refusal, or a load whose warning test.sh greps: Triton's words are part of the verdict."""
        return not self.out_of_scope and (not self.loads or self.warns)


def _grep_to_python(pattern: str) -> str:
    r"""A grep basic regular expression as Python's: ``\[`` and ``.`` keep their meaning, ``( ) + ? { } |``
    are literal in BRE."""
    return re.sub(r"(?<!\\)([()+?{}|])", r"\\\1", pattern)


def available(version: str = "2.51") -> bool:
    return (Suite.of(version).root / "test.sh").is_file()


def _expected(folder: Path) -> list[str]:
    return [p.read_text().strip() for p in sorted(folder.glob("expected*")) if p.is_file()]


def _dirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def cases(suite: Suite | None = None) -> list[QaCase]:
    """Every server run of test.sh that starts from a model configuration, in test.sh's order."""
    suite = suite or Suite.of("2.51")
    root = suite.root
    out: list[QaCase] = []
    for target in _dirs(root / "cli_messages"):
        reason = OUT_OF_SCOPE["cli_messages"]
        out.append(
            QaCase(
                f"cli_messages/{target.name}",
                target,
                loads=False,
                expected=_expected(target),
                out_of_scope=reason,
                suite=suite,
            )
        )
    for target in _dirs(root / "special_cases"):
        out.append(
            QaCase(
                f"special_cases/{target.name}",
                target,
                loads=False,
                expected=_expected(target),
                autofill=target.name != "invalid_platform",
                suite=suite,
            )
        )
    for trial in suite.trials:
        for target in _dirs(root / "noautofill_platform"):
            for add_version in (False, True):
                suffix = "+version" if add_version else ""
                out.append(
                    QaCase(
                        f"noautofill_platform/{target.name}@{trial}{suffix}",
                        target,
                        loads=False,
                        expected=_expected(target),
                        platform=trial,
                        autofill=False,
                        add_version=add_version,
                        suite=suite,
                    )
                )
    for kind, loads in (("autofill_noplatform", False), ("autofill_noplatform_success", True)):
        for group in _dirs(root / kind):
            for target in _dirs(group):
                single = (target / "config.pbtxt").is_file() or target.name.startswith("no_config")
                reason = OUT_OF_SCOPE.get(f"{kind}/{group.name}") if not loads else None
                out.append(
                    QaCase(
                        f"{kind}/{group.name}/{target.name}",
                        target,
                        loads=loads,
                        expected=_expected(target),
                        repository=not single,
                        out_of_scope=reason,
                        suite=suite,
                    )
                )
    # 2.72: model_metrics (the server runs with --metrics-config histogram_latencies=true) and custom_parameters
    for kind, loads, warns in (
        ("valid_config", True, False),
        ("valid_config_with_warn", True, True),
        ("invalid_config", False, False),
    ):
        for target in _dirs(root / "model_metrics" / kind):
            out.append(
                QaCase(
                    f"model_metrics/{kind}/{target.name}",
                    target,
                    loads=loads,
                    expected=_expected(target),
                    suite=suite,
                    warns=warns,
                    base="model_metrics",
                )
            )
    for backend in _dirs(root / "custom_parameters"):
        for kind, loads in (("valid", True), ("invalid", False)):
            for target in _dirs(backend / kind):
                rel = f"custom_parameters/{backend.name}/{kind}/{target.name}"
                out.append(
                    QaCase(
                        rel,
                        target,
                        loads=loads,
                        expected=_expected(target),
                        out_of_scope=OUT_OF_SCOPE.get(rel),
                        suite=suite,
                        base="custom_parameters",
                    )
                )
    return out


# -- layout, as test.sh does it ---------------------------------------------------------------------------
def _placeholder(path: Path, directory: bool = False) -> None:
    if directory:
        path.mkdir(parents=True, exist_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()


def _base_config(case: QaCase, target: Path) -> None:
    """test.sh's ``cat BASE partial.pbtxt > config.pbtxt`` (custom_parameters: then its three sed edits)."""
    partial = (target / "partial.pbtxt").read_text()
    text = BASE_CONFIGS[case.base] + partial
    if case.base == "custom_parameters":
        text = re.sub(r"(?m)^name:.*", f'name: "{target.name}"', text)
        text = re.sub(r"(?m)^version_policy:.*", "", text)
        text = re.sub(r"label_filename:.*", "", text)
        _placeholder(target / "1" / "model.plan")
    else:
        _placeholder(target / "1" / "model.py")
    (target / "config.pbtxt").write_text(text)


def lay_out(case: QaCase, into: Path) -> Path:
    """Copy the case under ``into/models`` the way test.sh does; returns the path to hand to ``check``
    (the model folder, or the repository for a whole-repository case)."""
    models = into / "models"
    if models.exists():
        shutil.rmtree(models)
    models.mkdir(parents=True)
    src = case.source
    rel = src.relative_to(case.suite.root).as_posix()
    if case.repository:
        for child in src.iterdir():
            if child.is_dir():
                shutil.copytree(child, models / child.name)
        target = models
    else:
        target = models / src.name
        shutil.copytree(src, target, ignore=shutil.ignore_patterns("expected*"))
    for p in list(models.rglob("expected*")):
        p.unlink()
    if case.base:
        _base_config(case, target)
    _add_files(rel, target, models, case.suite)
    if case.platform:
        cfg = target / "config.pbtxt"
        if cfg.is_file():
            lines = [ln for ln in cfg.read_text().splitlines() if "platform:" not in ln]
            cfg.write_text("\n".join(lines + [f'platform: "{case.platform}"']) + "\n")
    if case.add_version:
        (target / "1").mkdir(exist_ok=True)
    return target


def _add_files(rel: str, target: Path, models: Path, suite: Suite) -> None:
    """The version folders and model files test.sh creates or copies before starting the server."""
    group = rel.rsplit("/", 1)[0]
    if group in ("autofill_noplatform/tensorrt", "autofill_noplatform_success/tensorrt"):
        _placeholder(target / "1" / "model.plan")
    elif group in ("autofill_noplatform/pytorch",) or rel in (
        "autofill_noplatform_success/pytorch/no_name_platform",
        "autofill_noplatform_success/pytorch/cpu_instance",
    ):
        _placeholder(target / "1" / "model.pt")
    elif group in ("autofill_noplatform/python", "autofill_noplatform_success/python"):
        if (target / "model.py").is_file():
            _placeholder(target / "1", directory=True)
            shutil.copy(target / "model.py", target / "1" / "model.py")
        elif rel.endswith("conflicting_scheduler_ensemble"):
            for step in models.iterdir():
                if (step / "model.py").is_file():
                    (step / "1").mkdir(exist_ok=True)
                    shutil.copy(step / "model.py", step / "1" / "model.py")
        elif suite.python_auto_complete.is_file():
            (target / "1").mkdir(exist_ok=True)
            shutil.copy(suite.python_auto_complete, target / "1" / "model.py")
    elif group in ("autofill_noplatform/custom", "autofill_noplatform_success/custom"):
        (target / "1").mkdir(exist_ok=True)
    elif group == "autofill_noplatform/openvino" or rel.startswith("autofill_noplatform_success/openvino"):
        _placeholder(target / "1" / "model.xml")
        _placeholder(target / "1" / "model.bin")
    elif rel in (
        "noautofill_platform/invalid_cpu",
        "noautofill_platform/invalid_gpu",
        "noautofill_platform/negative_gpu",
    ):
        (target / "1").mkdir(exist_ok=True)
    elif rel == "special_cases/invalid_platform" and suite.version == "2.51":
        _placeholder(target / "1" / "model.savedmodel", directory=True)
    elif rel == "special_cases/invalid_platform":  # 2.72's test.sh copies an ONNX model
        _placeholder(target / "1" / "model.onnx")
    elif rel == "special_cases/noautofill_noconfig":
        _placeholder(target / "1" / "model.graphdef")
    elif rel == "special_cases/runtime_escape":
        (target / "1").mkdir(exist_ok=True)
        _placeholder(target / "dummy_runtime" / "libtriton_identity.so")
    elif rel == "special_cases/invalid_runtime":
        (target / "1").mkdir(exist_ok=True)
    elif rel in ("autofill_noplatform_success/tensorflow_graphdef/reshape_config_provided",):
        _placeholder(target / "1" / "model.graphdef")
    elif rel == "autofill_noplatform_success/tensorflow_savedmodel/reshape_config_provided":
        _placeholder(target / "1" / "model.savedmodel", directory=True)
    elif rel == "autofill_noplatform_success/onnx/cpu_instance":
        _placeholder(target / "1" / "model.onnx")
    elif group.endswith("/ensemble") and target == models:  # test.sh versions every model of these
        for model in models.iterdir():
            if model.is_dir():
                (model / "1").mkdir(exist_ok=True)
        for step in ("repeat_int32",):
            if (models / step).is_dir():
                _placeholder(models / step / "1" / "libtriton_repeat.so")


# -- running check on a suite, and the counts the closing note quotes ---------------------------------------
@dataclass
class Result:
    case: QaCase
    errors: list  # the error Problems check found, first first
    problems: list  # everything check found

    @property
    def verdict_agrees(self) -> bool:
        return (not self.errors) == self.case.loads

    @property
    def wording_agrees(self) -> bool:
        """Triton's expected text in check's first error (a refusal) or first warning (a load with one)."""
        if self.case.loads:
            warnings = [p for p in self.problems if p.severity == "warning" and p.triton_message]
            return bool(warnings) and self.case.matches(warnings[0].triton_message)
        return bool(self.errors) and self.case.matches(self.errors[0].triton_message)


def check_case(case: QaCase, tmp: Path) -> Result:
    """Lay the case out under ``tmp`` and run ``check --triton-version <suite's>`` on it, with the server flags
    test.sh runs it with (auto-complete on or off; one GPU, CUDA_VISIBLE_DEVICES=0)."""
    from triton_kitchen.cli.check import check_paths
    from triton_kitchen.core.ensemble import CheckOptions
    from triton_kitchen.core.versions import TritonVersion

    target = lay_out(case, tmp)
    options = CheckOptions(
        autofill=case.autofill, gpus=QA_GPUS, version=TritonVersion.parse(case.suite.version)
    )
    problems = check_paths([str(target)], options=options)
    return Result(case, [p for p in problems if p.is_error], problems)


def counts(results: list[Result]) -> dict:
    """cases, in scope, verdicts agreed, wording in scope and agreed, and the excluded cases with the reason."""
    in_scope = [r for r in results if not r.case.out_of_scope]
    worded = [r for r in in_scope if r.case.wording_in_scope]
    return {
        "cases": len(results),
        "in_scope": len(in_scope),
        "verdicts_agreed": sum(r.verdict_agrees for r in in_scope),
        "wording_in_scope": len(worded),
        "wording_agreed": sum(r.wording_agrees for r in worded),
        "excluded": {r.case.id: r.case.out_of_scope for r in results if r.case.out_of_scope},
    }
