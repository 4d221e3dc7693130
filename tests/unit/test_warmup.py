"""ui.warmup: the heavy imports done once, then frozen out of the garbage collector's sight (no server)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_heavy_imports_are_frozen_once_imported():
    """A full collection in the app no longer walks pandas', plotly's and tritonclient's objects (70-120 ms each
    time, measured): they are in the permanent generation once ui.warmup ran. Fails without its gc.freeze()."""
    code = "import gc, ui.warmup, plotly.graph_objects, tritonclient.http; print(gc.get_freeze_count())"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert int(out.stdout) > 50_000, out.stdout
