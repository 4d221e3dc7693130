"""ui/charts.py's figures, drawn offline: the streaming chart keeps its last word inside the plot."""

from __future__ import annotations

from types import SimpleNamespace


def test_stream_chart_keeps_the_last_word_inside():
    from ui.charts import token_figure

    run = SimpleNamespace(tokens=["Triton", "逐", "词", "端"], arrivals_ms=[9.0, 70.0, 130.0, 980.0])
    fig = token_figure([run], show_tokens=True)
    assert fig.layout.yaxis.range[1] >= len(run.tokens) + 1
    assert fig.data[0].cliponaxis is False
