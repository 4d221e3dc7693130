"""Imports done once, whole, before any page runs.

Streamlit runs every session's script on its own thread. When two first page runs import plotly at the
same time, one of them can find a half-imported ``pandas`` in ``sys.modules`` (plotly imports it lazily)
and fail with an AttributeError. Importing pandas here, from ``app.py`` before any page, makes every
later import find the finished module.
"""

from __future__ import annotations

import pandas  # noqa: F401 - imported for its side effect: a whole module in sys.modules
