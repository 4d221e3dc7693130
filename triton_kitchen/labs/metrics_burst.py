"""Chapter 10's metrics experiment: scrape the metrics port, send a burst to the classifier, scrape again.

``nv_inference_count`` counts inferences (one per request, per batch item), ``nv_inference_exec_count``
counts executions (one per batch the model ran): with dynamic batching a burst of N requests grows the first by
N and the second by fewer. The counters are the server's, for every client: another student's requests in the
same second are counted too, and the page says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from triton_kitchen.core.catalog import CLASSIFIER
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.tools import burst, metrics

MODEL = CLASSIFIER
SHOWN = ("nv_inference_request_success", "nv_inference_count", "nv_inference_exec_count")
COUNTED_TIMEOUT_S = 2.0  # the counters move a moment after the answers


@dataclass
class CountedBurst:
    n: int
    answered: int
    delta: metrics.ModelMetrics
    before: list[str] = field(default_factory=list)  # the model's sample lines, as the server wrote them
    after: list[str] = field(default_factory=list)

    def outcome(self) -> str | None:
        """``both_n``: both counters grew alike; ``fewer_exec``: fewer executions than inferences; None when
        the burst was not all answered or not all counted."""
        if self.answered < self.n or self.delta.inferences < self.n or self.delta.executions < 1:
            return None
        return "fewer_exec" if self.delta.executions < self.delta.inferences else "both_n"


def count_a_burst(endpoint: Endpoint, n: int = 8) -> CountedBurst:
    """Scrape, send ``n`` requests at once to the classifier (:func:`burst.burst`), scrape again.
    Raises metrics.MetricsError when nothing answers on the metrics port."""
    url = metrics.address_of(endpoint)
    text = metrics.fetch(url)
    sent = burst.burst(endpoint, n)
    deadline = time.monotonic() + COUNTED_TIMEOUT_S
    while True:  # until every answered request is counted (another client's only add to it)
        after = metrics.fetch(url)
        d = metrics.delta(metrics.parse(text), metrics.parse(after)).get(MODEL, metrics.ModelMetrics())
        if d.inferences >= sent.answered or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return CountedBurst(
        n,
        sent.answered,
        d,
        metrics.model_lines(text, MODEL, SHOWN),
        metrics.model_lines(after, MODEL, SHOWN),
    )
