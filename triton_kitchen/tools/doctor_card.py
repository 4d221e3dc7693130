"""The doctor's pure parts: where a request's time goes, the knee, the statistics check, the report card.

No I/O: :mod:`triton_kitchen.tools.doctor` measures and fills :class:`Cell` s; this module decides what they mean.
A cell is one protocol at one concurrency. Its client end-to-end time per request (``e2e_ms``) is split into
parts, each measured on its own (:data:`PARTS`); what no part explains is ``unexplained``, never spread over the
others. The card's words come from the ``[doctor]`` table of ``lessons/<lang>/ui.toml``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from triton_kitchen.core.lessons import t

# The parts of one request's time, in the order a request lives them:
#   serialize    the client builds the request from numpy (tritonclient's encoder; shm: writing the region)
#   wire         the request and the answer in transit: socket I/O both ends and the network (trace, or an echo)
#   frontend     the server's HTTP/gRPC front end: parsing the request, building the answer (trace only)
#   queue        waiting in Triton's scheduler (statistics)
#   compute      the model's compute input + infer + output (statistics)
#   server_other Triton's own time around them (its request time less the phases; statistics)
#   deserialize  the client turns the answer into numpy
#   unexplained  the client's end-to-end time that none of the above accounts for
PARTS = (
    "serialize",
    "wire",
    "frontend",
    "queue",
    "compute",
    "server_other",
    "deserialize",
    "unexplained",
)
UNEXPLAINED_TARGET = 0.10  # "unexplained" at most this share of the end-to-end time ...
CELLS_TARGET = 0.95  # ... in at least this share of the cells
PA_TOLERANCE = 0.10  # throughput within this of perf_analyzer's
KNEE_GAIN = 0.10  # the knee: the concurrency after which doubling gains less than this in throughput

# the statistics-delta check's verdicts
STATS_OURS = "ours"  # the delta counts exactly the doctor's requests
STATS_OTHER_CLIENT = "other_client"  # more requests than the doctor sent: another client used the model
STATS_MISSING = "missing"  # fewer than sent (the server has not counted them all)
STATS_NONE = "no_statistics"  # the server gives no statistics for the model


def check_delta(sent_ok: int, sent_failed: int, delta_ok: int | None, delta_failed: int | None) -> str:
    """Whether a statistics delta is the doctor's own requests: its success and failure counts equal what the
    doctor sent (``delta_ok`` None: no statistics for the model)."""
    if delta_ok is None:
        return STATS_NONE
    failed = delta_failed or 0
    if delta_ok == sent_ok and failed == sent_failed:
        return STATS_OURS
    if delta_ok > sent_ok or failed > sent_failed:
        return STATS_OTHER_CLIENT
    return STATS_MISSING


def find_knee(points: list[tuple[int, float]], gain: float = KNEE_GAIN) -> int:
    """The knee of a throughput curve: the lowest concurrency whose next point gains less than ``gain`` (its
    throughput below ``(1 + gain)`` times this one's); the highest measured when every step gained."""
    if not points:
        raise ValueError("no points")
    pts = sorted(points)
    for (c, rps), (_, next_rps) in zip(pts, pts[1:], strict=False):
        if next_rps < (1 + gain) * rps:
            return c
    return pts[-1][0]


def search_knee(
    measure: Callable[[int], float], max_concurrency: int = 16, gain: float = KNEE_GAIN
) -> tuple[int, list[tuple[int, float]]]:
    """Find the knee cheaply: concurrency 1, 2, 4, ... (``measure(c)``: throughput at ``c``), stopping at the
    first doubling that gains less than ``gain`` or at ``max_concurrency``. Returns (knee, points measured)."""
    points: list[tuple[int, float]] = []
    c = 1
    while True:
        points.append((c, measure(c)))
        if points[-1][1] <= 0:  # nothing answered: no curve to follow
            break
        if len(points) >= 2 and points[-1][1] < (1 + gain) * points[-2][1]:
            break
        if c >= max_concurrency:
            break
        c = min(max_concurrency, c * 2)
    return find_knee(points, gain), points


@dataclass
class Cell:
    """One protocol at one concurrency: the client's end-to-end time per request and its parts (ms per request;
    None: not measured, with the reason in ``notes``)."""

    protocol: str
    concurrency: int
    requests: int = 0
    errors: int = 0
    e2e_ms: float | None = None
    throughput_rps: float | None = None
    parts_ms: dict[str, float | None] = field(default_factory=dict)
    stats_check: str = ""
    wire_source: str = ""  # "trace" or "echo"
    perf_analyzer_rps: float | None = None
    engine_rps: float | None = None  # the doctor's engine in the slices interleaved with perf_analyzer's
    pa_rounds: list[list[float]] = field(
        default_factory=list
    )  # each slice's [engine req/s, perf_analyzer req/s]
    notes: list[str] = field(default_factory=list)  # message keys of [doctor] (with their parameters)

    def unexplained_ms(self) -> float | None:
        if self.e2e_ms is None:
            return None
        known = [v for k, v in self.parts_ms.items() if k != "unexplained" and v is not None]
        return self.e2e_ms - sum(known)

    def settle(self) -> None:
        """Fill ``unexplained`` from the end-to-end time and the measured parts."""
        self.parts_ms["unexplained"] = self.unexplained_ms()

    def unexplained_share(self) -> float | None:
        u = self.parts_ms.get("unexplained")
        if u is None or not self.e2e_ms:
            return None
        return abs(u) / self.e2e_ms

    def pa_difference(self) -> float | None:
        """The doctor's throughput against perf_analyzer's: the interleaved slices' where they ran (both saw the
        same moments of the machine), else the cell's own."""
        ours = self.engine_rps if self.engine_rps is not None else self.throughput_rps
        if self.perf_analyzer_rps is None or not ours or not self.perf_analyzer_rps:
            return None
        return (ours - self.perf_analyzer_rps) / self.perf_analyzer_rps

    def pa_round_differences(self) -> list[float]:
        """Each interleaved slice's difference (engine against perf_analyzer), in slice order."""
        return [e / p - 1 for e, p in self.pa_rounds if p]

    def pa_noisy(self) -> bool:
        """The slices disagree among themselves by more than the tolerance (half their range above it): the
        machine's load moved more between slices a few seconds apart than the check is meant to resolve, so a
        difference beyond the tolerance says nothing about the doctor. Two identical perf_analyzer runs, 10 s each,
        one after the other, differed by a factor 0.54 to 1.69 at load average 25-30 on 2 cores
        (``benchmarks/doctor_targets.py --paired --control only``)."""
        diffs = self.pa_round_differences()
        return len(diffs) >= 2 and (max(diffs) - min(diffs)) / 2 > PA_TOLERANCE

    def biggest(self) -> str | None:
        """The part that takes the most time (unexplained included)."""
        parts = {k: v for k, v in self.parts_ms.items() if v is not None}
        return max(parts, key=lambda k: parts[k]) if parts else None

    def advice(self) -> str:
        """The key of the change that would help this cell most, from the part that costs the most."""
        part = self.biggest()
        if part is None:
            return "advice_none"
        if part in ("serialize", "deserialize", "frontend", "wire") and self.protocol == "http-json":
            return "advice_binary"
        if part == "wire":
            return "advice_shm" if not self.protocol.endswith("-shm") else "advice_smaller"
        if part in ("serialize", "deserialize"):
            return "advice_reuse"
        if part == "frontend":
            return "advice_grpc" if self.protocol.startswith("http") else "advice_smaller"
        if part == "queue":
            return "advice_instances" if self.concurrency > 1 else "advice_batching_delay"
        if part in ("compute", "server_other"):
            return "advice_compute"
        return "advice_unexplained"

    def to_json(self) -> dict:
        d = asdict(self)
        d["unexplained_share"] = self.unexplained_share()
        d["perf_analyzer_difference"] = self.pa_difference()
        d["perf_analyzer_noisy"] = self.pa_noisy()
        d["biggest"] = self.biggest()
        d["advice"] = self.advice()
        return d


def targets(cells: list[Cell]) -> dict:
    """The doctor's own done-when figures over ``cells``: share of measured cells whose unexplained part is at
    most :data:`UNEXPLAINED_TARGET` of the end-to-end time; cells within :data:`PA_TOLERANCE` of perf_analyzer."""
    shares = [c.unexplained_share() for c in cells]
    measured = [s for s in shares if s is not None]
    within = sum(1 for s in measured if s <= UNEXPLAINED_TARGET)
    diffs = [(c.pa_difference(), c.pa_noisy()) for c in cells]
    checked = [d for d, _ in diffs if d is not None]
    return {
        "cells_measured": len(measured),
        "cells_unexplained_within": within,
        "unexplained_met": bool(measured) and within >= CELLS_TARGET * len(measured),
        "perf_analyzer_checked": len(checked),
        "perf_analyzer_within": sum(1 for d in checked if abs(d) <= PA_TOLERANCE),
        "perf_analyzer_met": bool(checked) and all(abs(d) <= PA_TOLERANCE for d in checked),
        # outside the tolerance while its own slices spread wider than it: the machine, not a verdict
        "perf_analyzer_noisy": sum(
            1 for d, noisy in diffs if d is not None and abs(d) > PA_TOLERANCE and noisy
        ),
    }


def _pa_text(cell: Cell, lang: str) -> str:
    """The cell's perf_analyzer check: the difference, its slices' range, and whether the machine moved too much."""
    pa = cell.pa_difference()
    if pa is None:
        return t("doctor.pa_none", lang)
    text = t("doctor.pa_diff", lang, diff=f"{100 * pa:+.0f}")
    diffs = cell.pa_round_differences()
    if len(diffs) >= 2:
        text += t("doctor.pa_rounds", lang, low=f"{100 * min(diffs):+.0f}", high=f"{100 * max(diffs):+.0f}")
    if abs(pa) > PA_TOLERANCE and cell.pa_noisy():
        text += t("doctor.pa_noisy", lang)
    return text


def _ms(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def _note_text(note: dict, lang: str) -> str:
    return t(f"doctor.{note['key']}", lang, **note.get("params", {}))


def card(report: dict, lang: str = "zh") -> str:
    """The report card as text in ``lang``: the server, then one line per cell (where the time goes, the change
    that would help most), then what could not be measured. ``report``: :func:`doctor.run_doctor`'s JSON."""
    out = [t("doctor.title", lang, url=report.get("url", ""))]
    server = report.get("server") or {}
    if server:
        out.append(
            t(
                "doctor.server_line",
                lang,
                version=server.get("version", "?"),
                release=server.get("release", "?"),
                models=len(server.get("models", [])),
                extensions=", ".join(server.get("extensions", [])),
            )
        )
        out.append(t(f"doctor.shm_{server.get('client_shm', 'not_local')}", lang))
    if report.get("model"):
        knee = report.get("knee") or {}
        out.append(t("doctor.model_line", lang, model=report["model"], knee=knee.get("concurrency", "?")))
    cells = [
        Cell(**{k: v for k, v in c.items() if k in Cell.__dataclass_fields__})
        for c in report.get("cells", [])
    ]
    if cells:
        out.append(t("doctor.cells_head", lang))
    for cell in cells:
        if cell.e2e_ms is None:
            out.append(
                t("doctor.cell_unmeasured", lang, protocol=cell.protocol, concurrency=cell.concurrency)
            )
            continue
        shares = []
        for part in PARTS:
            v = cell.parts_ms.get(part)
            if v is not None and cell.e2e_ms:
                share = round(100 * v / cell.e2e_ms)
                shares.append(f"{t('doctor.part_' + part, lang)} {share + 0}%")  # + 0: no "-0
        out.append(
            t(
                "doctor.cell_line",
                lang,
                protocol=cell.protocol,
                concurrency=cell.concurrency,
                e2e=_ms(cell.e2e_ms),
                rps=f"{cell.throughput_rps or 0:.1f}",
                parts=t("doctor.part_sep", lang).join(shares),
                pa=_pa_text(cell, lang),
            )
        )
        out.append("    " + t("doctor.advice_prefix", lang) + t(f"doctor.{cell.advice()}", lang))
    if cells:
        goal = report.get("targets") or targets(cells)
        out.append(
            t(
                "doctor.context",
                lang,
                source=report.get("wire_source", "?"),
                load=" ".join(f"{x:.1f}" for x in report.get("load_average", [])),
                elapsed=report.get("elapsed_s", "?"),
                within=goal["cells_unexplained_within"],
                measured=goal["cells_measured"],
                pa_within=goal["perf_analyzer_within"],
                pa_checked=goal["perf_analyzer_checked"],
            )
        )
    missing = report.get("not_measured", [])
    if missing:
        out.append(t("doctor.not_measured_head", lang))
        out.extend("  - " + _note_text(n, lang) for n in missing)
    if report.get("error"):
        out.append(_note_text(report["error"], lang))
    return "\n".join(out)
