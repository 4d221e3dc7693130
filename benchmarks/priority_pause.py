"""Does Triton's batcher pause with priority levels on? The classifier's burst of 32 (chapter 9's), repeated with
and without ``priority_levels: 2``, with and without 4 urgent requests (priority 1, as the chapter sends them);
prints each burst's longest pause between two answers and a summary (JSON with --out).

    python benchmarks/priority_pause.py                    # starts the embedded server
    python benchmarks/priority_pause.py --url localhost:8000 --grpc-url localhost:8001 --repeats 5

Chapter 9 says so on screen when its priority run paused (``scheduling.PAUSE_NOTE_MS``); this is where the
sentence "in most bursts with priority levels on, never without" comes from. The classifier's config is
restored afterwards (it needs a server whose repository API is open, as the chapter does).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _server import add_server_args, server_for  # noqa: E402

from triton_kitchen.core import override  # noqa: E402
from triton_kitchen.labs import scheduling  # noqa: E402
from triton_kitchen.tools import (
    batch_runs,  # noqa: E402
    burst,  # noqa: E402
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_server_args(ap)
    ap.add_argument("--repeats", type=int, default=3, help="bursts per setting")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    rows = []
    with server_for(args) as ep, override.overridden(ep, override.MODEL) as original:
        for levels in (2, 0):
            override.load_model(ep, override.MODEL, scheduling.priority_config(original, levels))
            time.sleep(batch_runs.SETTLE_S)
            burst.warm_up(ep)
            for late in (0, 4):
                for _ in range(args.repeats):
                    b = burst.burst(ep, 32, late, scheduling.HIGH if late else 0)
                    pause = b.longest_pause_ms() or 0.0
                    rows.append({"priority_levels": levels, "urgent": late, "longest_pause_ms": round(pause)})
                    print(f"priority_levels {levels}  urgent {late}  longest pause {pause:6.0f} ms")
    summary = {}
    for levels in (2, 0):
        mine = [r for r in rows if r["priority_levels"] == levels]
        paused = sum(1 for r in mine if r["longest_pause_ms"] >= scheduling.PAUSE_NOTE_MS)
        summary[f"priority_levels {levels}"] = (
            f"{paused} of {len(mine)} bursts paused >= {scheduling.PAUSE_NOTE_MS:g} ms"
        )
        print(summary[f"priority_levels {levels}"] + f" (priority_levels {levels})")
    if args.out:
        args.out.write_text(
            json.dumps({"server": args.url or "embedded", "bursts": rows, "summary": summary}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
