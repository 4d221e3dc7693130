"""What a fresh tab pays for Streamlit's sidebar and the course's navigation, before any page content.

    python benchmarks/shell_timing.py [--reps 10] [--pages ch2,ch8] [--lang en] [--json out.json]

benchmarks/page_timing.py compares each page with benchmarks/floor_app.py, an app with a title and no sidebar.
Every page of the course has a sidebar (its navigation, the language, the server's state). This measures, the
same way (a new tab of one browser profile, each sample paired with one of the floor app, a ratio the median of
its pairs' ratios), apps that add one thing at a time:
- "(sidebar)": the floor with a sidebar holding one caption (benchmarks/floor_sidebar_app.py);
- "(navigation)": the course's navigation, every chapter and lab with its icon, each page only the floor's
  title (benchmarks/floor_nav_app.py);
- with --pages, those pages of the course itself (app.py, the embedded Triton; "none" for none).
"main thread" is the seconds Chromium's main thread of the tab had been busy when it became interactive.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from page_timing import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    FLOOR_TITLE,
    FRESH_TARGET,
    fresh_round,
    learners_browser,
    page_titles,
    start_app,
    wait_for_triton,
)

from triton_kitchen.core import lessons  # noqa: E402

REFERENCES = {"(sidebar)": "benchmarks/floor_sidebar_app.py", "(navigation)": "benchmarks/floor_nav_app.py"}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lang", default="en", choices=lessons.LANGS)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument(
        "--pages", default="ch2,ch8", help="pages of the course to compare (a comma list, or none)"
    )
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    titles = page_titles(args.lang)
    wanted = [u for u in args.pages.split(",") if u not in ("", "none")]
    if unknown := [u for u in wanted if u not in titles]:
        parser.error(f"no such page: {', '.join(unknown)} (pages: {', '.join(titles)})")
    procs = []
    try:
        floor, floor_base = start_app("benchmarks/floor_app.py")
        procs.append(floor)
        targets: dict[str, tuple[str, str]] = {}
        for name, script in REFERENCES.items():
            proc, base = start_app(script)
            procs.append(proc)
            targets[name] = (f"{base}/?lang={args.lang}", FLOOR_TITLE)
        app_base = None
        if wanted:
            app, app_base = start_app("app.py")
            procs.append(app)
            targets |= {u: (f"{app_base}/{u}?lang={args.lang}", titles[u]) for u in wanted}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            if app_base:
                wait_for_triton(browser, app_base, args.lang)
            floor_url = f"{floor_base}/?lang={args.lang}"
            learner = learners_browser(browser, floor_url, targets)
            threads: dict[str, dict] = {"(floor app)": {}} | {u: {} for u in targets}
            result = fresh_round(learner, targets, floor_url, args.reps, threads)
            browser.close()
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(20)
    result["main_thread"] = {u: round(statistics.median(m["tasks"]), 2) for u, m in threads.items()}
    print(f"{'app':14s} {'interactive':>11s} {'÷ floor':>8s} {'pairs':>9s} {'main thread':>11s}")
    floor = result["floor"]
    print(
        f"{'(floor app)':14s} {floor['interactive']:11.2f} {1:8.2f} {'':9s} {result['main_thread']['(floor app)']:11.2f}"
    )
    for name in targets:
        lo, hi = result["fresh_ratio_range"][name]
        print(
            f"{name:14s} {result['fresh'][name]['interactive']:11.2f} {result['fresh_ratio_to_floor'][name]:8.2f}"
            f" {f'{lo:.2f}-{hi:.2f}':>9s} {result['main_thread'][name]:11.2f}"
        )
    lo, hi = floor["range"]
    print(f"the floor app took {lo:.2f}-{hi:.2f} s over the run ({args.reps} pairs per app)")
    nav = result["fresh_ratio_to_floor"]["(navigation)"]
    print(
        f"the course's navigation alone: {nav:.2f}x the floor, {(nav - 1) / (FRESH_TARGET - 1):.0%} of the"
        f" {FRESH_TARGET}x target's margin"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
