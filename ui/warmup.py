"""Imports done once, whole, before any page runs; then they are taken out of the garbage collector's sight.

Streamlit runs every session's script on its own thread. When two first page runs import plotly at the
same time, one of them can find a half-imported ``pandas`` in ``sys.modules`` (plotly imports it lazily)
and fail with an AttributeError. Importing pandas here, from ``app.py`` before any page, makes every
later import find the finished module.

The heavy libraries every page uses are imported here too, then frozen (``gc.freeze``): their ~140,000
objects live as long as the process, and a full collection walked all of them (70-120 ms, in the middle of
whichever page's run triggered it: a pause every session of the class waits through, the GIL being held).
"""

from __future__ import annotations

import gc

import numpy  # noqa: F401 - imported for its side effect: a whole module in sys.modules
import pandas  # noqa: F401
import plotly.graph_objects  # noqa: F401
import tritonclient.grpc  # noqa: F401
import tritonclient.http  # noqa: F401

gc.freeze()
