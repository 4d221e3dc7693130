"""What one rerun of a page costs, in the browser and on the server (Debian's Chromium through Playwright).

    python benchmarks/rerun_cost.py [--lang zh] [--reruns 10] [--pages ch2,ch4] [--json out.json]

Every click on a widget reruns the page's script, and the browser draws the new run: this is what a student's
laptop pays per click, and what the click-everything test pays about 430 times. Per page, one tab opens it as a
fresh visit shows it (its first section open, the other sections closed), waits until the embedded server is up
and the tab is quiet, then presses "r" (Streamlit's own rerun key) --reruns times, each after the last run has
finished. Printed per rerun (means):
- "chromium": CPU seconds of all of this browser's processes (main thread, compositor, GPU, browser process);
- "main thread": the tab's main thread (Chromium's TaskDuration; "script" the part running JavaScript);
- "server": CPU seconds of the Streamlit process (the script run; the embedded Triton is its child, not counted);
and each page's chromium figure as a ratio to benchmarks/floor_app.py's (a title only), measured in this run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

import psutil  # noqa: E402
from conftest import WATCH_SCRIPT_STATE  # noqa: E402
from page_timing import CHROMIUM, CHROMIUM_ARGS, FLOOR_TITLE, page_titles, start_app  # noqa: E402

from triton_kitchen.core import lessons  # noqa: E402

# quiet: the app's script state (conftest.WATCH_SCRIPT_STATE) is not running and did not change for 0.3 s
_QUIET_JS = """(since) => {
  const runs = window.__tkRuns || [];
  const app = document.querySelector('[data-testid=stApp]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning' || !runs.length) return false;
  if (since !== null && !runs.some(([at, s]) => at >= since && s !== 'notRunning')) return false;
  return performance.now() - runs[runs.length - 1][0] >= 300;
}"""
_UP_JS = "() => !!document.querySelector('[data-testid=stSidebar] [data-testid=stAlertContentSuccess]')"


def browser_cpu() -> float:
    """CPU seconds of the Chromium processes this benchmark started (descendants of this process)."""
    total = 0.0
    for proc in psutil.Process().children(recursive=True):
        try:
            if "chrom" in proc.name():
                total += sum(proc.cpu_times()[:2])
        except psutil.Error:
            pass
    return total


def measure(browser, url: str, title: str, server: psutil.Process, reruns: int, wait_up: bool) -> dict:
    """Means per rerun of the page at ``url``, in a new tab of its own."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.add_init_script(WATCH_SCRIPT_STATE)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    try:
        page.goto(url)
        page.wait_for_function(
            f"() => document.querySelector('h1')?.innerText.includes({title!r})", timeout=60_000
        )
        if wait_up:
            page.wait_for_function(_UP_JS, polling=100, timeout=240_000)
        page.wait_for_function(_QUIET_JS, arg=None, polling=25, timeout=60_000)

        def metrics() -> dict:
            return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}

        m0, c0, s0 = metrics(), browser_cpu(), sum(server.cpu_times()[:2])
        for _ in range(reruns):
            since = page.evaluate("() => performance.now()")
            page.keyboard.press("r")
            page.wait_for_function(_QUIET_JS, arg=since, polling=25, timeout=60_000)
        m1, c1, s1 = metrics(), browser_cpu(), sum(server.cpu_times()[:2])
        # the quiet 0.3 s after each run is idle time, in every figure alike
        return {
            "chromium": round((c1 - c0) / reruns, 3),
            "main_thread": round((m1["TaskDuration"] - m0["TaskDuration"]) / reruns, 3),
            "script": round((m1["ScriptDuration"] - m0["ScriptDuration"]) / reruns, 3),
            "server": round((s1 - s0) / reruns, 3),
        }
    finally:
        page.close()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lang", default="zh", choices=lessons.LANGS)
    parser.add_argument("--reruns", type=int, default=10)
    parser.add_argument("--pages", default="ch1,ch2,ch3,ch4,ch7,ch9,lab-protocols,lab-flow")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    titles = page_titles(args.lang)
    if unknown := [u for u in args.pages.split(",") if u not in titles]:
        parser.error(f"no such page: {', '.join(unknown)} (pages: {', '.join(titles)})")
    floor_app, floor_base = start_app("benchmarks/floor_app.py")
    app, base = start_app("app.py")
    result: dict = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            result["(floor app)"] = measure(
                browser,
                f"{floor_base}/?lang={args.lang}",
                FLOOR_TITLE,
                psutil.Process(floor_app.pid),
                args.reruns,
                False,
            )
            for url in args.pages.split(","):
                result[url] = measure(
                    browser,
                    f"{base}/{url}?lang={args.lang}",  # /home: the welcome page's alias
                    titles[url],
                    psutil.Process(app.pid),
                    args.reruns,
                    True,
                )
            browser.close()
    finally:
        for proc in (app, floor_app):
            proc.terminate()
            proc.wait(20)
    floor = result["(floor app)"]["chromium"] or float("nan")
    print(f"per rerun (mean of {args.reruns}), seconds of CPU; {args.lang}")
    print(f"{'page':<15}{'chromium':>9}{'÷ floor':>9}{'main thread':>13}{'script':>8}{'server':>8}")
    for url, r in result.items():
        ratio = r["chromium"] / floor
        print(
            f"{url:<15}{r['chromium']:>9.3f}{ratio:>9.1f}{r['main_thread']:>13.3f}{r['script']:>8.3f}{r['server']:>8.3f}"
        )
    total = statistics.mean(r["chromium"] for u, r in result.items() if u != "(floor app)")
    print(f"pages' mean: {total:.3f} s of Chromium CPU per rerun, {total / floor:.1f}x the floor's")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
