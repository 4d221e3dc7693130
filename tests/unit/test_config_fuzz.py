"""Property tests: random and mutated configs never crash; every failure is a clean error.

- any text (random, or a real config mutated) either parses or raises ConfigError with a line;
- whatever parses, validation returns Problems (never raises) and the DAG and its layout build;
- random ensembles over a small pool of tensor names: verdicts, stages and layout stay coherent.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triton_kitchen.core.config import ConfigError, ModelEntry, parse_config
from triton_kitchen.core.config_locations import locate
from triton_kitchen.core.ensemble import Problem, build_dag, has_errors, validate_model
from triton_kitchen.tools.diagram import compute_layout, to_dot

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
SEEDS = sorted(
    (p / "ens" / "config.pbtxt").read_text()
    for p in CORPUS.iterdir()
    if (p / "ens" / "config.pbtxt").is_file()
)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TOKENS = [
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "<",
    ">",
    '"',
    "-1",
    "0",
    "8",
    "1e9",
    "name",
    "input",
    "output",
    "dims",
    "step",
    "input_map",
    "output_map",
    "key",
    "value",
    "model_name",
    "model_version",
    "platform",
    "ensemble_scheduling",
    "dynamic_batching",
    "max_batch_size",
    "TYPE_FP32",
    "TYPE_BOGUS",
    '"x"',
    "\n",
    "#",
    "\\",
    "'",
    "\x00",
    "é",
    "reshape",
    "shape",
    "version_policy",
    "latest",
    "optional",
    "true",
]


def _entry_for(cfg, text: str, name: str = "ens") -> ModelEntry:
    return ModelEntry(
        name=name,
        path=Path("."),
        config_path=Path("ens/config.pbtxt"),
        config=cfg,
        text=text,
        versions=[1],
        files={1: ["model.py"]},
    )


def _check_text(text: str | bytes) -> None:
    try:
        cfg = parse_config(text, path="fuzz/config.pbtxt")
    except ConfigError as e:
        assert e.line is None or e.line >= 1
        assert e.code and e.message
        assert str(e).startswith("fuzz/config.pbtxt")
        return
    txt = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    locate(txt)
    repo = {"ens": _entry_for(cfg, txt)}
    problems = validate_model("ens", repo, with_dependencies=True)
    assert all(isinstance(p, Problem) and p.severity in ("error", "warning") for p in problems)
    if cfg.HasField("ensemble_scheduling"):
        dag = build_dag("ens", repo, validate=False)
        compute_layout(dag)
        to_dot(dag)


@FUZZ
@given(st.text(max_size=300))
def test_random_text_never_crashes(text):
    _check_text(text)


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_never_crash(data):
    _check_text(data)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=60).map(" ".join))
def test_token_soup_never_crashes(text):
    _check_text(text)


@FUZZ
@given(
    st.sampled_from(SEEDS),
    st.lists(
        st.tuples(
            st.sampled_from(["delete", "insert", "replace", "swap"]),
            st.integers(0, 10_000),
            st.integers(1, 12),
            st.sampled_from(TOKENS),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_mutated_configs_never_crash(seed, edits):
    text = seed
    for op, pos, n, tok in edits:
        pos %= max(len(text), 1)
        if op == "delete":
            text = text[:pos] + text[pos + n :]
        elif op == "insert":
            text = text[:pos] + tok + text[pos:]
        elif op == "replace":
            text = text[:pos] + tok + text[pos + n :]
        else:
            lines = text.splitlines()
            if len(lines) > 2:
                i = pos % (len(lines) - 1)
                lines[i], lines[i + 1] = lines[i + 1], lines[i]
                text = "\n".join(lines)
    _check_text(text)


# -- random ensembles against real step configs ------------------------------------------------

NAMES = ["IN", "OUT", "t0", "t1", "t2", "t3"]


def _step_model(name: str, n_in: int, n_out: int, mbs: int, dims: list[int], dtype: str) -> ModelEntry:
    ins = ", ".join(f'{{ name: "I{i}" data_type: {dtype} dims: {dims} }}' for i in range(n_in))
    outs = ", ".join(f'{{ name: "O{i}" data_type: {dtype} dims: {dims} }}' for i in range(n_out))
    text = f'name: "{name}"\nbackend: "python"\nmax_batch_size: {mbs}\ninput [ {ins} ]\noutput [ {outs} ]\n'
    return ModelEntry(
        name=name,
        path=Path(name),
        config_path=Path(name) / "config.pbtxt",
        config=parse_config(text),
        text=text,
        versions=[1],
        files={1: ["model.py"]},
    )


step_spec = st.tuples(
    st.sampled_from(["m1", "m2", "m3", "missing"]),
    st.sampled_from([-1, -1, -1, 1, 0, 2]),
    st.lists(st.tuples(st.sampled_from(["I0", "I1", "I9"]), st.sampled_from(NAMES)), min_size=0, max_size=3),
    st.lists(st.tuples(st.sampled_from(["O0", "O1", "O9"]), st.sampled_from(NAMES)), min_size=0, max_size=3),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(step_spec, min_size=0, max_size=6),
    st.sampled_from([0, 4, 8]),
    st.sampled_from(["[ 4 ]", "[ -1 ]", "[ 2, 2 ]"]),
    st.sampled_from(["TYPE_FP32", "TYPE_INT32"]),
)
def test_random_ensembles_are_coherent(steps, mbs, ens_dims, dtype):
    repo = {
        "m1": _step_model("m1", 1, 1, 8, [4], "TYPE_FP32"),
        "m2": _step_model("m2", 2, 2, 4, [4], "TYPE_FP32"),
        "m3": _step_model("m3", 1, 1, 0, [-1, 4], "TYPE_FP32"),
    }
    body = []
    for model, version, imap, omap in steps:
        parts = [f'model_name: "{model}" model_version: {version}']
        parts += [f'input_map {{ key: "{k}" value: "{v}" }}' for k, v in imap]
        parts += [f'output_map {{ key: "{k}" value: "{v}" }}' for k, v in omap]
        body.append("{ " + " ".join(parts) + " }")
    text = (
        f'name: "ens"\nplatform: "ensemble"\nmax_batch_size: {mbs}\n'
        f'input [ {{ name: "IN" data_type: {dtype} dims: {ens_dims} }} ]\n'
        f'output [ {{ name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] }} ]\n'
        f"ensemble_scheduling {{ step [ {', '.join(body)} ] }}\n"
    )
    cfg = parse_config(text)
    repo["ens"] = _entry_for(cfg, text)
    problems = validate_model("ens", repo, with_dependencies=True)
    assert all(p.line is None or p.line >= 1 for p in problems)
    dag = build_dag("ens", repo, validate=False)
    # stages: a step runs after every producer of its inputs
    by_id = {s.id: s for s in dag.steps}
    for t in dag.tensors:
        if t.producer and t.kind != "input":
            for c in t.consumers:
                if by_id[c].stage is not None and c != t.producer:
                    assert by_id[t.producer].stage is not None and by_id[t.producer].stage < by_id[c].stage
    if not has_errors(problems):
        assert all(s.stage for s in dag.steps)  # a loadable ensemble has no step that never runs
    lay = compute_layout(dag)
    assert set(lay.positions) == set(dag.nodes())
    for e in lay.edges:
        assert e.points[0] == lay.positions[e.source] and e.points[-1] == lay.positions[e.target]
