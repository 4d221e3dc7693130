"""The tutorial's mistakes as config edits: the live demos of chapters 2 and 8 apply these to real configs."""

from __future__ import annotations

import re

from google.protobuf import text_format

from triton_kitchen.core.config import parse_config

# one map entry written on one line, as the repository's configs write them
_MAP_ENTRY = re.compile(r'(input_map\s*\{\s*key:\s*)"([^"]+)"(\s*value:\s*)"([^"]+)"')


def swap_outcome(check) -> str:
    """Chapter 2's "what happens with input_map swapped": ``loads`` or ``refused``, from the check of the
    swapped config against Triton's load rules (``repository.check_ensemble_text``)."""
    return "loads" if check.ok else "refused"


def swap_input_map(text: str, step: int | None = None) -> str:
    """``text`` with one ``input_map`` entry's key and value swapped (the tutorial's reversed rule).

    ``step`` counts from 0 over the entries in the file; None picks the first entry whose key and value
    differ (swapping equal names would change nothing). Only that entry's text changes, so line numbers
    in the checker's messages still match the original. Raises ValueError when there is no such entry.
    """
    entries = [m for m in _MAP_ENTRY.finditer(text) if step is not None or m.group(2) != m.group(4)]
    if step is not None:
        entries = entries[step : step + 1]
    if not entries:
        raise ValueError("no input_map entry to swap")
    m = entries[0]
    swapped = f'{m.group(1)}"{m.group(4)}"{m.group(3)}"{m.group(2)}"'
    return text[: m.start()] + swapped + text[m.end() :]


def reverse_steps(text: str) -> str:
    """``text`` with its ensemble steps listed in reverse order (Triton schedules by data, not by order)."""
    cfg = parse_config(text)
    steps = list(cfg.ensemble_scheduling.step)
    del cfg.ensemble_scheduling.step[:]
    cfg.ensemble_scheduling.step.extend(reversed(steps))
    return text_format.MessageToString(cfg)
