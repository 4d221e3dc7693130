"""Triton's own config QA suite (``qa/L0_model_config`` of Triton v2.51.0) laid out as its ``test.sh`` does,
so that ``check`` can be compared with the verdict and the error line Triton's log must hold.

The suite is reference data outside this repository (``../shared/triton-qa/``, or ``$TRITON_QA_DIR``); it is
read, never copied in.  Where ``test.sh`` copies a model binary from a path that is not public, an empty
placeholder file (or folder) of the same name stands in.  Each :class:`QaCase` is one server run of
``test.sh``: a ``noautofill_platform`` case once per platform.  Cases whose verdict comes from a backend reading
the model file, running model code, or from the server's command line are in :data:`OUT_OF_SCOPE`, with the
reason.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QA_ROOT = Path(os.environ.get("TRITON_QA_DIR", ROOT.parent / "shared" / "triton-qa"))
SUITE = QA_ROOT / "L0_model_config-2.51"
PYTHON_AUTO_COMPLETE = QA_ROOT / "python_models-2.51" / "auto_complete" / "model.py"

# test.sh: TRIALS, the platforms each noautofill_platform case is run with
TRIALS = (
    "tensorflow_savedmodel",
    "tensorflow_graphdef",
    "tensorrt_plan",
    "onnxruntime_onnx",
    "pytorch_libtorch",
)

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

    def matches(self, text: str | None) -> bool:
        """Whether Triton's wording (any expected* grep pattern, as test.sh greps its log) is in ``text``, as
        Triton logs it: after the status code's name ("Invalid argument: ", for a config rule)."""
        if not text:
            return False
        logged = f"{STATUS_PREFIX}{text}"
        return any(re.search(_grep_to_python(p), logged) for p in self.expected)


def _grep_to_python(pattern: str) -> str:
    r"""A grep basic regular expression as Python's: ``\[`` and ``.`` keep their meaning, ``( ) + ? { } |``
    are literal in BRE."""
    return re.sub(r"(?<!\\)([()+?{}|])", r"\\\1", pattern)


def available() -> bool:
    return (SUITE / "test.sh").is_file()


def _expected(folder: Path) -> list[str]:
    return [p.read_text().strip() for p in sorted(folder.glob("expected*")) if p.is_file()]


def cases() -> list[QaCase]:
    """Every server run of test.sh that starts from a model configuration, in test.sh's order."""
    out: list[QaCase] = []
    for target in sorted(p for p in (SUITE / "cli_messages").iterdir() if p.is_dir()):
        reason = OUT_OF_SCOPE["cli_messages"]
        out.append(
            QaCase(
                f"cli_messages/{target.name}",
                target,
                loads=False,
                expected=_expected(target),
                out_of_scope=reason,
            )
        )
    for target in sorted(p for p in (SUITE / "special_cases").iterdir() if p.is_dir()):
        out.append(
            QaCase(
                f"special_cases/{target.name}",
                target,
                loads=False,
                expected=_expected(target),
                autofill=target.name != "invalid_platform",
            )
        )
    for trial in TRIALS:
        for target in sorted(p for p in (SUITE / "noautofill_platform").iterdir() if p.is_dir()):
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
                    )
                )
    for kind, loads in (("autofill_noplatform", False), ("autofill_noplatform_success", True)):
        for group in sorted(p for p in (SUITE / kind).iterdir() if p.is_dir()):
            for target in sorted(p for p in group.iterdir() if p.is_dir()):
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


def lay_out(case: QaCase, into: Path) -> Path:
    """Copy the case under ``into/models`` the way test.sh does; returns the path to hand to ``check``
    (the model folder, or the repository for a whole-repository case)."""
    models = into / "models"
    if models.exists():
        shutil.rmtree(models)
    models.mkdir(parents=True)
    src = case.source
    rel = src.relative_to(SUITE).as_posix()
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
    _add_files(rel, target, models)
    if case.platform:
        cfg = target / "config.pbtxt"
        if cfg.is_file():
            lines = [ln for ln in cfg.read_text().splitlines() if "platform:" not in ln]
            cfg.write_text("\n".join(lines + [f'platform: "{case.platform}"']) + "\n")
    if case.add_version:
        (target / "1").mkdir(exist_ok=True)
    return target


def _add_files(rel: str, target: Path, models: Path) -> None:
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
        elif PYTHON_AUTO_COMPLETE.is_file():
            (target / "1").mkdir(exist_ok=True)
            shutil.copy(PYTHON_AUTO_COMPLETE, target / "1" / "model.py")
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
    elif rel == "special_cases/invalid_platform":
        _placeholder(target / "1" / "model.savedmodel", directory=True)
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
