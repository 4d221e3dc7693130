"""Triton's own words when it refuses to load a config: the answer to the load request and the reason it logged.

A config that fails Triton's checks gets only "failed to poll from model repository" from the load API; the
reason is in the server's log, on a "Poll failed for model directory" line.
"""

from __future__ import annotations

import re

POLL_FAILED = "Poll failed for model directory"  # Triton's log line when a config fails its checks on load


def triton_text(detail: str) -> str:
    """Triton's own words from a refused load: what follows the HTTP status in the app's error detail."""
    found = re.search(r"HTTP [45]\d\d: ", detail)
    return detail[found.end() :].strip() if found else detail


def logged_reason(before: str, after: str) -> str:
    """The config check's reason Triton logged between two reads of its log: the last new "Poll failed" line's
    message ("Poll failed for model directory 'classifier': Only one priority level is allowed ..."), or ""."""
    seen = set(before.splitlines())
    new = [line for line in after.splitlines() if POLL_FAILED in line and line not in seen]
    if not new:
        return ""
    line = new[-1]
    return line[line.index(POLL_FAILED) :].rstrip().rstrip('"')
