"""How long until each chapter is usable, in a real browser (Debian's Chromium through Playwright).

    python benchmarks/page_timing.py [--lang en]

Starts `streamlit run app.py` (embedded server), waits until the server is up (chapter 1's classify
button is enabled), then measures, per chapter, the seconds until its title is on screen:
- "fresh": a new tab opening the chapter's URL (includes Streamlit's frontend start-up);
- "in-tab": clicking the chapter in the sidebar of an open tab (how a learner moves through the course).
The browser, the app and Triton share this machine's cores.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

from triton_kitchen import lessons  # noqa: E402
from triton_kitchen.server import free_port  # noqa: E402


def seconds_until_title(page, text: str, t0: float, timeout: float = 60.0) -> float | None:
    while time.monotonic() - t0 < timeout:
        h1 = page.locator("[data-testid=stMain] h1")
        if h1.count() and text in h1.first.inner_text():
            return round(time.monotonic() - t0, 2)
        time.sleep(0.02)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", default="en", choices=lessons.LANGS)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    port = free_port()
    app = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true", f"--server.port={port}"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"{base}/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.3)
        titles = {n: lessons.load_lesson(n, args.lang).title for n in range(1, 9)}
        result: dict[str, dict[str, float | None]] = {"fresh": {}, "in_tab": {}}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            first = browser.new_page()
            first.goto(f"{base}/ch1?lang={args.lang}")
            first.wait_for_selector("button[kind=primary]:not([disabled])", timeout=180_000)  # server up
            for n, title in titles.items():
                page = browser.new_page()
                t0 = time.monotonic()
                page.goto(f"{base}/ch{n}?lang={args.lang}", wait_until="commit")
                result["fresh"][f"ch{n}"] = seconds_until_title(page, title, t0)
                page.close()
            for n in [*range(2, 9), 1]:
                t0 = time.monotonic()
                first.locator(f"[data-testid=stSidebarNav] a[href*='ch{n}']").first.click()
                result["in_tab"][f"ch{n}"] = seconds_until_title(first, titles[n], t0)
                time.sleep(0.5)
            browser.close()
    finally:
        app.terminate()
        app.wait(20)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
