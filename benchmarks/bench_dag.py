"""Parse + validate + lay out a generated 50-step ensemble; target: at most 100 ms.

    python benchmarks/bench_dag.py [--steps 50] [--repeat 20] [--shape chain|ladder] [--json]

Writes a temporary repository (``--steps`` Python step models and one ensemble), then times
``load_repository`` (protobuf parse of every config.pbtxt) + ``validate_model`` (Triton's rules
against the step configs) + ``build_dag`` + ``compute_layout``.  Prints the median and the
best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from triton_kitchen.core.config import load_repository  # noqa: E402
from triton_kitchen.core.ensemble import build_dag, has_errors, validate_model  # noqa: E402
from triton_kitchen.tools.diagram import compute_layout  # noqa: E402

STEP = """name: "{name}"
backend: "python"
max_batch_size: 8
input [ {{ name: "A" data_type: TYPE_FP32 dims: [ 16 ] }}{extra_in} ]
output [ {{ name: "B" data_type: TYPE_FP32 dims: [ 16 ] }} ]
"""


def make_chain_repository(root: str | Path, steps: int = 50, shape: str = "chain") -> Path:
    """A repository with ``steps`` step models and an ensemble ``chain`` using all of them.

    ``chain``: s0 -> s1 -> ... ; ``ladder``: every step also reads the ensemble input, and
    every third step reads the tensor two stages back (more edges, more crossings to avoid).
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    ens_steps = []
    for i in range(steps):
        name = f"s{i}"
        extra = ladder = ""
        if shape == "ladder" and i >= 2 and i % 3 == 0:
            extra = ', { name: "C" data_type: TYPE_FP32 dims: [ 16 ] }'
            ladder = f' input_map {{ key: "C" value: "t{i - 2}" }}'
        (root / name / "1").mkdir(parents=True, exist_ok=True)
        (root / name / "1" / "model.py").write_text("")
        (root / name / "config.pbtxt").write_text(STEP.format(name=name, extra_in=extra))
        src = "IN" if i == 0 else f"t{i - 1}"
        dst = "OUT" if i == steps - 1 else f"t{i}"
        ens_steps.append(
            f'    {{ model_name: "{name}" model_version: -1 input_map {{ key: "A" value: "{src}" }}{ladder} '
            f'output_map {{ key: "B" value: "{dst}" }} }}'
        )
    (root / "chain" / "1").mkdir(parents=True, exist_ok=True)
    (root / "chain" / "config.pbtxt").write_text(
        'name: "chain"\nplatform: "ensemble"\nmax_batch_size: 8\n'
        'input [ { name: "IN" data_type: TYPE_FP32 dims: [ 16 ] } ]\n'
        'output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 16 ] } ]\n'
        "ensemble_scheduling {\n  step [\n" + ",\n".join(ens_steps) + "\n  ]\n}\n"
    )
    return root


def run_once(repo_dir: Path) -> tuple[float, dict]:
    t0 = time.perf_counter()
    repo = load_repository(repo_dir)
    t1 = time.perf_counter()
    problems = validate_model("chain", repo, with_dependencies=True)
    t2 = time.perf_counter()
    dag = build_dag("chain", repo, validate=False)
    lay = compute_layout(dag)
    t3 = time.perf_counter()
    parts = {"parse_ms": (t1 - t0) * 1e3, "validate_ms": (t2 - t1) * 1e3, "dag_layout_ms": (t3 - t2) * 1e3}
    assert not has_errors(problems), [p.message for p in problems]
    assert len(lay.positions) == len(dag.steps) + 2
    return (t3 - t0) * 1e3, parts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--shape", choices=["chain", "ladder"], default="chain")
    ap.add_argument("--target-ms", type=float, default=100.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tk-bench-") as tmp:
        repo = make_chain_repository(Path(tmp), args.steps, args.shape)
        run_once(repo)  # warm-up (imports, caches)
        runs = [run_once(repo) for _ in range(args.repeat)]
    totals = [r[0] for r in runs]
    median = statistics.median(totals)
    parts = {k: statistics.median(r[1][k] for r in runs) for k in runs[0][1]}
    result = {
        "steps": args.steps,
        "shape": args.shape,
        "repeat": args.repeat,
        "median_ms": round(median, 2),
        "best_ms": round(min(totals), 2),
        **{k: round(v, 2) for k, v in parts.items()},
        "target_ms": args.target_ms,
        "within_target": median <= args.target_ms,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{args.steps}-step {args.shape} ensemble: parse + validate + DAG + layout "
            f"median {median:.1f} ms (best {min(totals):.1f} ms) over {args.repeat} runs; "
            f"parse {parts['parse_ms']:.1f} ms, validate {parts['validate_ms']:.1f} ms, "
            f"DAG + layout {parts['dag_layout_ms']:.1f} ms; target <= {args.target_ms:.0f} ms: "
            f"{'OK' if median <= args.target_ms else 'MISSED'}"
        )
    return 0 if median <= args.target_ms else 1


if __name__ == "__main__":
    sys.exit(main())
