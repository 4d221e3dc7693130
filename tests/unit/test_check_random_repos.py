"""``check`` on repositories as people really lay them out, and on random ones: it never raises.

Real repositories use backends of other NVIDIA images (TensorRT-LLM, vLLM, FasterTransformer), leave a step
model's config.pbtxt to auto-complete, and contain empty folders, unreadable files and symlink loops. Each gets a
``PATH:LINE: severity: message`` line; an unknown backend stays Triton's refusal. The property test builds random
repositories (folders, config fragments, missing files, symlinks) and runs the command line on them.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triton_kitchen.cli.check import check_paths
from triton_kitchen.cli.main import main
from triton_kitchen.core.ensemble import CheckOptions

LINE = re.compile(r"^.+:\d+: (error|warning|note): \S.*$")


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _model(root: Path, name: str, text: str, files: dict[str, str] | None = None) -> Path:
    d = root / name
    (d / "1").mkdir(parents=True)
    (d / "config.pbtxt").write_text(text)
    for fname, content in (files or {}).items():
        (d / "1" / fname).write_text(content)
    return d


IO = (
    'max_batch_size: 4\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
    'output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
)


# -- backends of other images -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "backend,image",
    [
        ("tensorrtllm", "tritonserver:<yy.mm>-trtllm-python-py3"),
        ("vllm", "tritonserver:<yy.mm>-vllm-python-py3"),
        ("fastertransformer", "fastertransformer_backend"),
    ],
)
def test_a_backend_of_another_image_is_a_note_naming_the_image(tmp_path, backend, image):
    _model(tmp_path, backend, f'name: "{backend}"\nbackend: "{backend}"\n' + IO)
    code, out, err = _run(["check", str(tmp_path)])
    assert code == 0, out
    (line,) = out.splitlines()
    assert f":2: note: backend '{backend}'" in line and image in line
    assert "--backend-directory" in line and "note(s)" in err


def test_any_other_unknown_backend_stays_tritons_refusal(tmp_path):
    _model(tmp_path, "m", 'name: "m"\nbackend: "nosuch"\n' + IO)
    (p,) = check_paths([str(tmp_path)])
    assert p.severity == "error" and p.code == "unknown_backend"
    assert p.triton_message.startswith("unable to find backend library for backend 'nosuch'")


def test_backend_directory_checks_against_the_servers_folder(tmp_path):
    repo, backends = tmp_path / "repo", tmp_path / "backends"
    for b in ("tensorrtllm", "vllm", "python", "mine"):
        _model(repo, b, f'name: "{b}"\nbackend: "{b}"\n' + IO, {"model.py": ""} if b == "python" else None)
    (backends / "tensorrtllm").mkdir(parents=True)
    (backends / "tensorrtllm" / "libtriton_tensorrtllm.so").write_bytes(b"")
    (backends / "vllm").mkdir()
    (backends / "vllm" / "model.py").write_text("")  # a Python-based backend: needs the Python backend too
    (backends / "python").mkdir()
    (backends / "python" / "libtriton_python.so").write_bytes(b"")

    def verdicts(**kw):
        ps = check_paths([str(repo)], options=CheckOptions(backend_directory=str(backends), **kw))
        return {Path(p.path).parent.name: (p.severity, p.code) for p in ps}

    # what the folder holds loads; what it lacks is Triton's refusal, even a backend of another image
    assert verdicts() == {"mine": ("error", "unknown_backend")}
    (backends / "python" / "libtriton_python.so").unlink()
    assert verdicts() == {b: ("error", "unknown_backend") for b in ("mine", "python", "vllm")}
    # without the folder: the base image's backends, and a note for the other images' ones
    ps = check_paths([str(repo)])
    assert {Path(p.path).parent.name: p.severity for p in ps} == {
        "mine": "error",
        "tensorrtllm": "note",
        "vllm": "note",
    }
    code, _, err = _run(["check", str(repo), "--backend-directory", str(tmp_path / "none")])
    assert code == 2 and "not a directory" in err


# -- what used to crash ---------------------------------------------------------------------------------
def test_a_step_model_left_to_auto_complete_is_a_warning_on_the_step(tmp_path):
    ens = (
        'name: "ens"\nplatform: "ensemble"\n' + IO + 'ensemble_scheduling { step [ { model_name: "step" '
        'model_version: -1 input_map { key: "A" value: "X" } output_map { key: "B" value: "Y" } } ] }\n'
    )
    _model(tmp_path, "ens", ens)
    (tmp_path / "step" / "1").mkdir(parents=True)
    (tmp_path / "step" / "1" / "model.onnx").write_bytes(b"")  # no config.pbtxt: ORT fills it at load
    code, out, _ = _run(["check", str(tmp_path)])
    assert code == 0
    lines = out.splitlines()
    assert any(
        re.match(r".*ens/config\.pbtxt:\d+: warning: step 1 \(step\) has no config\.pbtxt", ln)
        for ln in lines
    )
    assert all(LINE.match(ln) for ln in lines)


def test_empty_folder_unreadable_file_and_symlink_loops_each_get_a_line(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, _ = _run(["check", str(empty)])
    assert code == 0 and out.endswith(": warning: no model directories here\n")

    loop = tmp_path / "loop"
    loop.mkdir()
    os.symlink("self", loop / "self")
    code, out, _ = _run(["check", str(loop)])
    assert code == 1 and "failed to stat file" in out and LINE.match(out.strip())
    code, out, _ = _run(["check", str(loop / "self")])
    assert code == 1 and ":1: error: cannot read: Too many levels of symbolic links" in out

    inner = tmp_path / "inner"
    m = _model(inner, "m", 'name: "m"\nbackend: "python"\n', {"model.py": ""})
    os.symlink("b", m / "a")
    os.symlink("a", m / "b")
    code, out, _ = _run(["check", str(inner)])
    assert code == 1 and "failed to stat file" in out and LINE.match(out.strip())

    unreadable = tmp_path / "unreadable"
    _model(unreadable, "m", 'name: "m"\nbackend: "python"\n', {"model.py": ""})
    real = Path.read_bytes

    def refuse(self):
        if self.name == "config.pbtxt":
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", refuse)  # root reads any file, so the refusal is simulated
    code, out, _ = _run(["check", str(unreadable)])
    assert code == 1 and out.strip().endswith(":1: error: cannot read: Permission denied"), out


# -- random repositories ---------------------------------------------------------------------------------
NAMES = ["a", "b", "ens", "m.custom", "step", "1"]
FRAGMENTS = [
    'name: "{name}"\n',
    'name: "{other}"\n',
    'platform: "ensemble"\n',
    'platform: "onnxruntime_onnx"\n',
    'backend: "python"\n',
    'backend: "tensorrtllm"\n',
    'backend: "vllm"\n',
    'backend: "nosuch"\n',
    'runtime: "model.py"\n',
    'runtime: "../x.so"\n',
    "max_batch_size: 8\n",
    "max_batch_size: -1\n",
    'input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]\n',
    'output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]\n',
    'input [ { name: "X" data_type: TYPE_STRING dims: [ 1 ] reshape: { shape: [ ] } } ]\n',
    'ensemble_scheduling { step [ { model_name: "{other}" model_version: -1 '
    'input_map { key: "X" value: "X" } output_map { key: "Y" value: "Y" } } ] }\n',
    'ensemble_scheduling { step [ { model_name: "{name}" model_version: 1 } ] }\n',
    "dynamic_batching { }\n",
    "sequence_batching { }\n",
    "instance_group [ { kind: KIND_GPU gpus: [ 3 ] } ]\n",
    "version_policy { specific { versions: [ 2 ] } }\n",
    "{ [ \n",
    "\xff\xfe",
    "",
]
FILES = ["model.py", "model.onnx", "model.plan", "model.savedmodel", "libtriton_nosuch.so", "model.json"]

model_specs = st.fixed_dictionaries(
    {
        "name": st.sampled_from(NAMES),
        "config": st.one_of(
            st.none(),  # no config.pbtxt
            st.just("DIR"),  # config.pbtxt is a folder
            st.just("DANGLING"),  # config.pbtxt links to nothing
            st.lists(st.tuples(st.sampled_from(FRAGMENTS), st.sampled_from(NAMES)), max_size=7),
        ),
        "versions": st.lists(st.sampled_from(["1", "2", "0", "-1", "x"]), max_size=2, unique=True),
        "files": st.lists(st.sampled_from(FILES), max_size=2, unique=True),
        "links": st.lists(st.sampled_from(["loop", "dangling", "up", "sibling"]), max_size=2, unique=True),
    }
)
repo_specs = st.fixed_dictionaries(
    {
        "models": st.lists(model_specs, max_size=4),
        "root_links": st.lists(st.sampled_from(["loop", "dangling", "model"]), max_size=1),
        "stray_file": st.booleans(),
        "target": st.sampled_from(["repo", "model", "config", "version"]),
        "flags": st.sampled_from([[], ["--json"], ["--triton"], ["--disable-auto-complete-config"]]),
    }
)


def _build(root: Path, spec: dict) -> None:
    for m in spec["models"]:
        d = root / m["name"]
        d.mkdir(exist_ok=True)
        cfg = d / "config.pbtxt"
        if cfg.exists() or cfg.is_symlink():
            continue  # the same name twice: the first one stays
        if m["config"] == "DIR":
            cfg.mkdir()
        elif m["config"] == "DANGLING":
            os.symlink("nowhere.pbtxt", cfg)
        elif m["config"] is not None:
            text = "".join(f.replace("{name}", m["name"]).replace("{other}", o) for f, o in m["config"])
            cfg.write_bytes(text.encode("utf-8", "surrogateescape") if "\xff" not in text else b"\xff\xfe")
        for v in m["versions"]:
            (d / v).mkdir(exist_ok=True)
            for f in m["files"]:
                (d / v / f).write_text("def auto_complete_config(c):\n    return c\n")
        for kind in m["links"]:
            target = {"loop": "loop", "dangling": "gone", "up": "..", "sibling": f"../{NAMES[0]}"}[kind]
            if not os.path.lexists(d / kind):
                os.symlink(target, d / kind)
    for kind in spec["root_links"]:
        os.symlink({"loop": "link_loop", "dangling": "gone", "model": NAMES[1]}[kind], root / f"link_{kind}")
    if spec["stray_file"]:
        (root / "README.md").write_text("not a model\n")


def _target(root: Path, spec: dict) -> Path:
    models = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())
    if spec["target"] == "repo" or not models:
        return root
    m = models[0]
    return {"model": m, "config": m / "config.pbtxt", "version": m / "1"}[spec["target"]]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(repo_specs)
def test_check_never_raises_on_a_random_repository(spec):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        _build(root, spec)
        code, out, err = _run(["check", str(_target(root, spec)), *spec["flags"]])
    assert code in (0, 1), (code, out, err)
    if "--json" in spec["flags"]:
        report = json.loads(out)
        assert report["ok"] == (code == 0)
        assert all(p["severity"] in ("error", "warning", "note") for p in report["problems"])
        return
    lines = [ln for ln in out.splitlines() if not ln.startswith("    triton: ")]
    bad = [ln for ln in lines if not LINE.match(ln)]
    assert bad == [], bad
    assert (code == 1) == any(": error: " in ln for ln in lines)
    assert "Traceback" not in err
