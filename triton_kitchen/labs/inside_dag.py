"""The ensemble's DAG with one request seen from inside drawn on it: the failing step highlighted
with Triton's own message, the steps pruned for the outputs a client left out greyed, and each step coloured by
its queue or compute time (one request, or the median of the last N).

What is drawn comes from :mod:`triton_kitchen.tools.inside` (the server's statistics and, where open to us, its trace),
never from the config alone: before a request is sent, only the *prediction* (which steps the requested outputs
need) is drawn, and said to be one. The DOT comes from :func:`triton_kitchen.tools.diagram.to_dot` with
:class:`~triton_kitchen.tools.diagram.Mark` decorations; the words from the ``[inside]`` table of ``ui.toml``.

    report = inside_dag.probe(endpoint, "second_opinion", jpeg, outputs=["top5_labels"])
    dot = inside_dag.dot(dag, lang="zh", outputs=["top5_labels"], report=report, colour_by="compute")
"""

from __future__ import annotations

import statistics
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from triton_kitchen.core import lessons
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.ensemble import Dag, build_dag
from triton_kitchen.core.server import DEFAULT_REPOSITORY
from triton_kitchen.tools import diagram, inside

# bytes that are no image: what a student sends to see a step fail (preprocess's Pillow refuses them)
NOT_AN_IMAGE = b"Triton Kitchen: a text file, not a photo.\n"
COLOUR_BY = ("total", "queue", "compute")
# the overlay's scale, light (fast) to dark (slow): ColorBrewer YlOrBr, distinct from the failed step's red
SCALE = ("#fff7bc", "#fee391", "#fec44f", "#fe9929", "#ec7014", "#cc4c02", "#8c2d04")
FAILED = diagram.Mark(fill="#f8d0d0", border="#c0392b", width=3.0)
PRUNED = diagram.Mark(fill="#f1f1f1", border="#b0b0b0", dashed=True, font="#9a9a9a")
NOT_RUN = diagram.Mark(fill="#f1f1f1", border="#b0b0b0", font="#9a9a9a")
MESSAGE_WIDTH = 46  # characters per line of Triton's message on the failed step


def _w(lang: str, key: str, **args) -> str:
    return lessons.t("inside." + key, lang, **args)


def repository_dag(model: str, repo: Path | str = DEFAULT_REPOSITORY) -> Dag:
    """The ensemble's DAG from the repository's configs (step ids as :mod:`inside` reports them)."""
    return build_dag(model, repo, validate=False)


def takes_bytes(dag: Dag) -> bool:
    """The ensemble's one input is BYTES (encoded image bytes): a non-image can be sent to it."""
    return len(dag.inputs) == 1 and dag.tensor(dag.inputs[0]).data_type in ("TYPE_STRING", "BYTES")


def input_arrays(dag: Dag, image: bytes) -> dict[str, np.ndarray]:
    """One request for the ensemble's one input: the encoded bytes as they are for a BYTES input, the
    classifier's preprocessed [1, 3, 224, 224] tensor for an FP32 one (``ensemble_pipeline``)."""
    if len(dag.inputs) != 1:
        raise inside.InsideError("bad_input", f"{dag.name} has {len(dag.inputs)} inputs, not one")
    name = dag.inputs[0]
    if takes_bytes(dag):
        return {name: np.array([[image]], dtype=object)}
    from triton_kitchen.core.samples import image_tensor

    try:
        return {name: image_tensor(image)}
    except Exception as exc:  # Pillow's UnidentifiedImageError and friends: the client cannot even build it
        raise inside.InsideError("bad_input", f"not an image: {exc}") from exc


def probe(
    endpoint: Endpoint,
    model: str,
    image: bytes,
    outputs: list[str] | None = None,
    protocol: str = "grpc",
    dag: Dag | None = None,
) -> inside.InsideReport:
    """Send one request (``image`` as the ensemble's input) asking for ``outputs`` (None: all) and report it
    from inside (raises :class:`inside.InsideError` when the request cannot be made)."""
    dag = dag or repository_dag(model)
    return inside.look_inside(endpoint, model, input_arrays(dag, image), outputs=outputs, protocol=protocol)


@dataclass(frozen=True)
class StepTime:
    """One step's queue and compute time: one request's, or the median over ``n`` requests."""

    queue_ms: float | None
    compute_ms: float | None
    n: int

    def value(self, colour_by: str) -> float | None:
        if colour_by == "queue":
            return self.queue_ms
        if colour_by == "compute":
            return self.compute_ms
        if self.queue_ms is None and self.compute_ms is None:
            return None
        return (self.queue_ms or 0.0) + (self.compute_ms or 0.0)


def step_times(reports: list[inside.InsideReport]) -> dict[str, StepTime]:
    """Step id -> the median queue and compute time over the ``reports`` in which the step ran (one report:
    that request's times). Steps that never ran are left out."""
    runs: dict[str, list[inside.StepReport]] = {}
    for report in reports:
        for s in report.steps:
            if s.ran:
                runs.setdefault(s.id, []).append(s)

    def med(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    return {
        sid: StepTime(med(s.queue_ms for s in steps), med(s.compute_ms for s in steps), len(steps))
        for sid, steps in runs.items()
    }


def shade(value: float, top: float) -> tuple[str, str]:
    """(fill, font colour) for ``value`` on the overlay's scale from 0 to ``top``."""
    f = 0.0 if top <= 0 else min(max(value / top, 0.0), 1.0)
    fill = SCALE[min(int(f * len(SCALE)), len(SCALE) - 1)]
    return fill, ("#ffffff" if fill in SCALE[-2:] else diagram.COLORS["text"])


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def marks(
    dag: Dag,
    lang: str = "en",
    outputs: list[str] | None = None,
    report: inside.InsideReport | None = None,
    times: dict[str, StepTime] | None = None,
    colour_by: str | None = None,
) -> dict[str, diagram.Mark]:
    """Node id -> its decoration. Without ``report``: the steps the requested ``outputs`` do not need, greyed
    as *predicted*. With it: what the server did (pruned, failed with Triton's message, not reached), and with
    ``times`` and ``colour_by`` each step that ran coloured by its time on one scale."""
    requested = set(outputs or dag.outputs)
    out: dict[str, diagram.Mark] = {}
    for o in dag.outputs:
        if o not in requested:
            out[f"out:{o}"] = PRUNED.with_lines(_w(lang, "not_requested"))
    if report is None:
        need = inside.needed_steps(dag, list(requested))
        for s in dag.steps:
            if s.id not in need:
                out[s.id] = PRUNED.with_lines(_w(lang, "would_prune"))
        return out
    failed_id = None
    if not report.ok and report.failed_step:
        failed_id = next((s.id for s in report.steps if s.model == report.failed_step), None)
    top = 0.0
    if times and colour_by:
        top = max((t.value(colour_by) or 0.0 for t in times.values()), default=0.0)
    for s in report.steps:
        if s.id not in {d.id for d in dag.steps}:
            continue
        if s.id == failed_id:
            message = textwrap.wrap(_short_error(report.error or ""), MESSAGE_WIDTH)[:4]
            out[s.id] = FAILED.with_lines(_w(lang, "failed_here"), *message)
        elif not s.ran and not s.needed:
            out[s.id] = PRUNED.with_lines(_w(lang, "pruned"))
        elif not s.ran:
            out[s.id] = NOT_RUN.with_lines(_w(lang, "not_run"))
        elif times and s.id in times:
            t = times[s.id]
            line = _w(lang, "times", queue=_ms(t.queue_ms), compute=_ms(t.compute_ms))
            if t.n > 1:
                line += " " + _w(lang, "median_of", n=t.n)
            fill, font = (None, None)
            value = t.value(colour_by) if colour_by else None
            if value is not None:
                fill, font = shade(value, top)
            out[s.id] = diagram.Mark(fill=fill, font=font, lines=(line,))
    if not report.ok:
        for o in dag.outputs:
            out.setdefault(f"out:{o}", NOT_RUN)
    return out


def _short_error(text: str) -> str:
    """Triton's message without the client's ``HTTP 400:``-style prefix (the full text is shown beside)."""
    for prefix in ("[StatusCode.INVALID_ARGUMENT] ", "[StatusCode.INTERNAL] "):
        text = text.removeprefix(prefix)
    return inside._PREFIX.sub("", text).strip() or text


def dot(
    dag: Dag,
    lang: str = "en",
    outputs: list[str] | None = None,
    report: inside.InsideReport | None = None,
    times: dict[str, StepTime] | None = None,
    colour_by: str | None = None,
) -> str:
    """The DAG's DOT with :func:`marks` on it."""
    return diagram.to_dot(dag, lang=lang, marks=marks(dag, lang, outputs, report, times, colour_by))


def confirmation(dag: Dag, outputs: list[str] | None, report: inside.InsideReport) -> tuple[list, list, list]:
    """(predicted pruned, pruned by the server, steps the prediction got wrong) by step model, for one report:
    the config's prediction beside what the server's statistics (or trace) saw."""
    need = inside.needed_steps(dag, outputs)
    predicted = [s.model for s in dag.steps if s.id not in need]
    wrong = [s.model for s in report.steps if (s.id in need) != s.ran] if report.ok else []
    return predicted, list(report.pruned), wrong
