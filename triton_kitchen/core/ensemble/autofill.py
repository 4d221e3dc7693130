"""What Triton 2.51 fills into a config before it checks it, and where it finds a backend.

``AutoCompleteBackendFields`` of Triton's ``model_config_utils.cc`` (it runs whether or not auto-complete
is enabled): the name from the folder, then platform, backend and default model file from what the config
names or, failing that, from the file in the first version folder; a config that names nothing gets the
custom backend ``<backend>`` of a folder named ``<name>.<backend>``.  Then what a backend itself completes
from the model file when auto-complete is on (ONNX Runtime, TensorRT, OpenVINO, TensorFlow SavedModel,
Python), and where the backend library is looked for at load time (``runtime``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from triton_kitchen.core.config import ENSEMBLE_PLATFORM, ModelEntry
from triton_kitchen.core.versions import EMBEDDED, TritonVersion

AOTI = "model.pt2"
# PyTorch's AOTInductor models: platform torch_aoti or a model.pt2 file, served by the pytorch backend (core
# r26.03 src/model_config_utils.cc, 'Add Support for Torch AOTI', core #477)
TORCH_AOTI_SINCE = TritonVersion(2, 67)
# core #484 ('Fix PyTorch Default Initialization', r26.04): a model found by its model.pt / model.pt2 gets the
# platform pytorch_libtorch / torch_aoti and no default_model_filename; platform "libtorch" names the pytorch
# backend too; model.pt is filled in only when no platform was known
PYTORCH_DEFAULTS_SINCE = TritonVersion(2, 68)
SAVEDMODEL, GRAPHDEF, PLAN, ONNX, OPENVINO, LIBTORCH, PYTHON = (
    "model.savedmodel",
    "model.graphdef",
    "model.plan",
    "model.onnx",
    "model.xml",
    "model.pt",
    "model.py",
)

# platform -> the backend type Triton derives from it (GetBackendTypeFromPlatform)
PLATFORM_BACKEND = {
    "tensorflow_graphdef": "tensorflow",
    "tensorflow_savedmodel": "tensorflow",
    "tensorrt_plan": "tensorrt",
    "onnxruntime_onnx": "onnxruntime",
    "pytorch_libtorch": "pytorch",
}
# backends whose type Triton knows (GetBackendType); any other backend may pair with any platform
TYPED_BACKENDS = frozenset(PLATFORM_BACKEND.values())

# the backends of Triton 2.51's container (/opt/tritonserver/backends of nvcr.io/nvidia/tritonserver:24.10-py3)
CONTAINER_BACKENDS = frozenset(
    {
        "dali",
        "fil",
        "identity",
        "onnxruntime",
        "openvino",
        "python",
        "pytorch",
        "repeat",
        "square",
        "tensorflow",
        "tensorrt",
    }
)

# The TensorFlow backend left the containers in 25.03 (2.56): server r25.03 build.py no longer builds it
# ('merge kmcgill-remove-tf', server #8113), and its QA suite's TRIALS drop the two TensorFlow platforms
TENSORFLOW_GONE_SINCE = TritonVersion(2, 56)


def container_backends(version: TritonVersion = EMBEDDED) -> frozenset[str]:
    """The backends of Triton ``version``'s base container (2.51's list, less TensorFlow from 2.56)."""
    if version >= TENSORFLOW_GONE_SINCE:
        return CONTAINER_BACKENDS - {"tensorflow"}
    return CONTAINER_BACKENDS


# Backends that a repository written for another NVIDIA image uses and the base image
# (nvcr.io/nvidia/tritonserver:<yy.mm>-py3) does not ship: backend -> where it ships. The image names are
# those of the server's docs/introduction/compatibility.md (the -trtllm- and -vllm- containers, from 24.04
# in that table); FasterTransformer was never in an NGC image: its backend repository builds one.
NGC_IMAGE_BACKENDS = {
    "tensorrtllm": "nvcr.io/nvidia/tritonserver:<yy.mm>-trtllm-python-py3",
    "vllm": "nvcr.io/nvidia/tritonserver:<yy.mm>-vllm-python-py3",
    "fastertransformer": "github.com/triton-inference-server/fastertransformer_backend",
}


@dataclass
class Completed:
    """The fields Triton fills in before validating (or the reason it could not)."""

    name: str
    platform: str
    backend: str
    default_model_filename: str
    invalid_name: bool = False  # no backend could be determined and the folder is not ``<name>.<backend>``


def _subdirs(path: Path) -> list[str]:
    try:
        return sorted(d.name for d in os.scandir(path) if d.is_dir())
    except OSError:
        return []


def complete(entry: ModelEntry, version: TritonVersion = EMBEDDED) -> Completed:
    """AutoCompleteBackendFields of Triton ``version`` for ``entry`` (a model folder; a standalone config gets
    no file lookups)."""
    cfg = entry.config
    name = cfg.name if cfg is not None and cfg.name else entry.name
    platform = cfg.platform if cfg is not None else ""
    backend = cfg.backend if cfg is not None else ""
    filename = cfg.default_model_filename if cfg is not None else ""
    versions = [] if entry.standalone else _subdirs(entry.path)
    vpath = entry.path / versions[0] if versions else None
    try:
        content = set(os.listdir(vpath)) if vpath is not None else set()
    except OSError:
        content = set()

    def has_file(fname: str) -> bool:
        return fname in content and not (vpath / fname).is_dir()

    def has_dir(fname: str) -> bool:
        return fname in content and (vpath / fname).is_dir()

    done = Completed(name, platform, backend, filename)
    # TensorFlow: the platform is required, found from the file name or the folder's content
    if not platform and (not backend or backend == "tensorflow"):
        if filename == SAVEDMODEL:
            done.platform = "tensorflow_savedmodel"
        elif filename == GRAPHDEF:
            done.platform = "tensorflow_graphdef"
        elif not filename and vpath is not None:
            if has_dir(SAVEDMODEL):
                done.platform = "tensorflow_savedmodel"
            if has_file(GRAPHDEF):
                done.platform = "tensorflow_graphdef"
    if done.platform in ("tensorflow_savedmodel", "tensorflow_graphdef"):
        done.backend = done.backend or "tensorflow"
        done.default_model_filename = done.default_model_filename or (
            SAVEDMODEL if done.platform == "tensorflow_savedmodel" else GRAPHDEF
        )
        return done
    # TensorRT, ONNX Runtime, OpenVINO, PyTorch, Python: each from platform, file name or folder content
    if version >= TORCH_AOTI_SINCE and _pytorch(done, vpath, has_file, version):
        return done
    for be, plat, fname, is_file in (
        ("tensorrt", "tensorrt_plan", PLAN, True),
        ("onnxruntime", "onnxruntime_onnx", ONNX, None),
        ("openvino", None, OPENVINO, None),
        ("pytorch", "pytorch_libtorch", LIBTORCH, True),
        ("python", None, PYTHON, None),
    ):
        if not done.backend:
            if (plat and done.platform == plat) or done.default_model_filename == fname:
                done.backend = be
            elif not done.platform and not done.default_model_filename and vpath is not None:
                found = has_file(fname) if is_file else fname in content
                if found:
                    done.backend = be
                    if be == "pytorch":
                        done.platform = plat
        if done.backend == be:
            if plat and not done.platform:
                done.platform = plat
            done.default_model_filename = done.default_model_filename or fname
            return done
    # a custom backend, only when the config names nothing: from a folder named <name>.<backend>
    if not done.backend and not done.platform and not done.default_model_filename:
        if "." not in entry.name:
            done.invalid_name = True
        else:
            done.backend = entry.name.split(".", 1)[1]
            done.default_model_filename = f"model.{done.backend}"
    return done


def _pytorch(done: Completed, vpath: Path | None, has_file, version: TritonVersion) -> bool:
    """The PyTorch part of AutoCompleteBackendFields from 2.67 on (LibTorch and AOTInductor); True when it
    settled the backend (the fields are filled into ``done``)."""
    libtorch = (
        ("pytorch_libtorch", "libtorch") if version >= PYTORCH_DEFAULTS_SINCE else ("pytorch_libtorch",)
    )
    if not done.backend:
        if done.platform in libtorch or done.default_model_filename == LIBTORCH:
            done.backend = "pytorch"
        elif done.platform == "torch_aoti" or done.default_model_filename == AOTI:
            done.backend = "pytorch"
        elif not done.platform and not done.default_model_filename and vpath is not None:
            for fname, plat in ((LIBTORCH, "pytorch_libtorch"), (AOTI, "torch_aoti")):
                if has_file(fname):
                    done.backend = "pytorch"
                    if version >= PYTORCH_DEFAULTS_SINCE:
                        done.platform = plat
                    break
    if done.backend != "pytorch":
        return False
    if version < PYTORCH_DEFAULTS_SINCE:  # 2.67: as 2.51, whatever the file
        done.platform = done.platform or "pytorch_libtorch"
        done.default_model_filename = done.default_model_filename or LIBTORCH
    elif not done.platform:
        done.platform = "pytorch_libtorch"
        done.default_model_filename = done.default_model_filename or LIBTORCH
    elif done.platform == "torch_aoti":
        done.default_model_filename = done.default_model_filename or AOTI
    return True


def fills_from_model_file(entry: ModelEntry, done: Completed) -> bool:
    """Whether, with auto-complete on, the backend completes the config (inputs, outputs, batching) from the
    model file: ONNX Runtime, TensorRT, OpenVINO and TensorFlow SavedModel with the file present, Python
    (its stub sets the config; a model.py's ``auto_complete_config`` fills the tensors)."""
    if done.platform == ENSEMBLE_PLATFORM or entry.standalone:
        return False
    fname = done.default_model_filename
    for files in entry.files.values():
        if fname not in files:
            continue
        if done.backend in ("onnxruntime", "tensorrt", "openvino"):
            return True
        if done.backend == "tensorflow" and done.platform == "tensorflow_savedmodel":
            return True
        if done.backend == "python":
            return True
    return False


def python_auto_completes(entry: ModelEntry, done: Completed) -> bool:
    """Whether a Python model's file defines ``auto_complete_config`` (which may fill missing dims and types)."""
    if done.backend != "python":
        return False
    for v, files in entry.files.items():
        if done.default_model_filename in files:
            try:
                text = (entry.path / str(v) / done.default_model_filename).read_text(errors="replace")
            except OSError:
                continue
            if re.search(r"def\s+auto_complete_config\s*\(", text):
                return True
    return False


def local_backends() -> set[str]:
    """Backends of the embedded tritonserver (the nvidia-pytriton wheel), when it is installed."""
    try:
        from triton_kitchen.core.server import wheel_paths

        root = wheel_paths()[0] / "backends"
    except ImportError:  # no embedded server: the container's list alone
        return set()
    return set(_subdirs(root))


def escapes(runtime: str) -> bool:
    """A ``runtime`` that climbs out of the backend folder (``../x.so``): Triton refuses it."""
    depth = 0
    for part in PurePosixPath(runtime).parts:
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in (".", "/"):
            depth += 1
    return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a symlink loop, a name too long: not a file Triton could open either
        return False


def library_found(
    entry: ModelEntry, backend: str, runtime: str, known: set[str], backend_dir: str | None = None
) -> bool:
    """Whether Triton finds the backend library: ``runtime`` (or ``libtriton_<backend>.so``) in the version
    folder, the model folder or the backend's folder of the server (``known``: the backends it has).

    With ``backend_dir`` (tritonserver's ``--backend-directory``) the server's folder is looked at itself, as
    ``TritonModel::GetBackendLibraryProperties`` does: ``<dir>/<backend>/<library>``, or for a Python-based
    backend ``<dir>/<backend>/model.py`` and the Python backend's ``libtriton_python.so``."""
    lib = runtime or f"libtriton_{backend}.so"
    places = [entry.path / str(v) for v in entry.versions] + [entry.path]
    if any(_is_file(p / lib) for p in places):
        return True
    if backend_dir is not None:
        root = Path(backend_dir)
        if runtime != PYTHON and _is_file(root / backend / lib):
            return True
        if runtime and runtime != PYTHON:
            return False
        python_lib = [*places, root / "python"]
        return _is_file(root / backend / PYTHON) and any(
            _is_file(p / "libtriton_python.so") for p in python_lib
        )
    if not runtime:
        return backend in known
    if runtime == PYTHON:  # a Python-based backend: <backend folder>/model.py
        return backend in known
    return any(runtime == f"libtriton_{b}.so" for b in known) and backend in known
