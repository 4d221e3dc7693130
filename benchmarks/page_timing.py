"""How long until each page is interactive, in a real browser (Debian's Chromium through Playwright).

    python benchmarks/page_timing.py [--lang en] [--reps 3] [--json out.json] [--pages ch1,lab-flow]
        [--floor nav|title] [--no-first-visit] [--in-tab-reps N] [--script-reps N] [--retry-failing]

    # the target: every page (teacher: the teacher's desk, in a class) against the navigation shell, 10 pairs
    python benchmarks/page_timing.py --lang zh --reps 10 --no-first-visit --up-tabs none --in-tab-reps 3 \
        --script-reps 3 --retry-failing --pages home,ch1,...,lab-break,teacher

Starts `streamlit run app.py` (embedded server) and, while Triton starts, opens every page in its own
tab: "server_up" is, per tab, the seconds from Triton answering ready (on :8000) until the tab's sidebar
says it is up and the page is interactive. Then, with Triton up, per page, the median over --reps of
the seconds until
- "title": the page's title is on screen;
- "interactive": the title is on screen and the script has finished (Streamlit's script state is
  notRunning), so every widget answers a click at once.
Three ways to arrive:
- "fresh": a new tab of the learner's browser opening the page's URL (includes Streamlit's frontend start-up;
  Streamlit's scripts come from the browser's cache, as in every tab after the first visit);
- "1st visit": the same in a browser profile of its own, with an empty cache (every script fetched from the
  app; Playwright's browser.new_page() opens each page in a new profile, so it measures this, not "fresh");
- "in_tab": clicking the page in the sidebar of an open tab (how a learner moves through the course).
The same is measured for a floor app (with --lang zh, with a Chinese word in its title: a Chinese page's font
is not the page's cost): by default (--floor nav) benchmarks/floor_nav_app.py, the course's navigation shell
(Streamlit's sidebar and every page's link, each page only a title), what every page of the course pays before
any content; with --floor title benchmarks/floor_app.py, a title and nothing else (Streamlit's own start-up on
this machine). Each fresh-tab sample of a page is paired with one of the floor taken just before or after it
(rounds alternate which comes first); a page's ratio ("÷ floor") is the median of its pairs' ratios, with their
range ("pairs") and the machine's 1-minute load average while they were taken ("load"). Figures are printed as
seconds and as ratios to that floor, measured in this run. The browser, both apps and Triton share this
machine's cores; `uptime` is recorded at the start and the end of the run.

The page "teacher" is the teacher's desk: with it in --pages the app runs as a class's (a teacher's token set,
its class database a file under benchmarks/out/), every tab opens with the token, and the navigation shell
lists the teacher's page too (as app.py does for the teacher). --retry-failing measures each page over the
target once more (--reps pairs) and reports both rounds.

Where a fresh tab's time goes, without a browser: "script" is the median seconds of the page's script run
in a new session over Streamlit's own websocket protocol (what the server does: the sidebar's status, the
page's calls and figures), and "elements" what the page sends the browser to draw (plotly charts, graphviz
charts, dataframes, images each load and run more frontend code). "main thread" is the seconds
Chromium's main thread of a fresh tab had been busy (TaskDuration; script, layout and style apart in
--json) when the page became interactive. Fresh-tab time is about the floor + script + drawing.
Targets: a fresh tab within 1.3x the floor; moving in an open tab within 1 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from _floor import FLOOR_TITLE  # noqa: E402
from _server import start_streamlit  # noqa: E402
from conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

from triton_kitchen.core import lessons  # noqa: E402
from triton_kitchen.core.server import free_port  # noqa: E402
from triton_kitchen.core.settings import DATABASE_URL_ENV, TEACHER_TOKEN_ENV  # noqa: E402
from ui.pages import LABS, TEACHER  # noqa: E402

FRESH_TARGET = 1.3  # a fresh tab within this many times the floor app's
IN_TAB_TARGET_S = 1.0  # moving between pages in an open tab
# elements whose drawing loads and runs more frontend code than text does
HEAVY_ELEMENTS = ("plotly_chart", "graphviz_chart", "dataframe", "arrow_table", "imgs", "vega_lite_chart")

OUT = ROOT / "benchmarks" / "out"  # the apps' own output (gitignored)
FLOORS = {"nav": "benchmarks/floor_nav_app.py", "title": "benchmarks/floor_app.py"}
BENCH_TOKEN = "page-timing"  # the teacher's token of a run that measures the teacher's desk
# In-page check (no round trip per poll): the title holds `text`, and, for "interactive", the script is done.
_TITLE_JS = """([text, done]) => {
  const h1 = document.querySelector('[data-testid=stMain] h1');
  if (!h1 || !h1.innerText.includes(text)) return false;
  if (!done) return true;
  const app = document.querySelector('[data-testid=stApp]');
  return app && app.getAttribute('data-test-script-state') === 'notRunning';
}"""


def start_app(script: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """`streamlit run script` on a free port, with ``env`` added to its environment."""
    port = free_port()
    with _environ(env or {}):
        proc = start_streamlit(script, port, OUT / f"page_timing_{Path(script).stem}.log")
    return proc, f"http://127.0.0.1:{port}"


@contextlib.contextmanager
def _environ(env: dict[str, str]):
    """``env`` in os.environ while the block runs (a child process started in it inherits them)."""
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def uptime() -> str:
    """`uptime`'s line: the machine is shared, its load is part of a figure's context."""
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def arrive(page, text: str, go) -> tuple[float, float]:
    """Seconds from go() until the title shows, and until the page is interactive."""
    t0 = time.monotonic()
    go()
    page.wait_for_function(_TITLE_JS, arg=[text, False], polling=20, timeout=60_000)
    title = time.monotonic() - t0
    page.wait_for_function(_TITLE_JS, arg=[text, True], polling=20, timeout=60_000)
    return title, time.monotonic() - t0


# Chromium's own accounting of a tab's main thread (seconds, from the tab's start), read when it is interactive
MAIN_THREAD = {"tasks": "TaskDuration", "script": "ScriptDuration", "layout": "LayoutDuration",
               "style": "RecalcStyleDuration"}  # fmt: skip


def fresh(opener, url: str, text: str, main_thread: dict | None = None) -> tuple[float, float]:
    """A new tab opening ``url``: seconds until the title shows and until interactive. ``opener``: a browser
    context (a tab of the learner's browser: Streamlit's scripts come from its cache) or the browser (each tab
    in a context of its own, with an empty cache: a first visit). With ``main_thread``, also what the tab's main
    thread had done by then (Chromium's Performance metrics), into that dict."""
    page = opener.new_page()
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    try:
        timings = arrive(page, text, lambda: page.goto(url, wait_until="commit"))
        if main_thread is not None:
            metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
            for name, metric in MAIN_THREAD.items():
                main_thread.setdefault(name, []).append(metrics.get(metric, 0.0))
        return timings
    finally:
        page.close()
        time.sleep(0.5)  # let the closed tab's work finish before the next measurement


# Set in every tab: the first moment (Date.now()) the sidebar says the server is up and the script is done.
_UP_WATCH_JS = """(() => {
  window.__tkUpAt = null;
  const mark = %s;
  const id = setInterval(() => {
    const app = document.querySelector('[data-testid=stApp]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return;
    if (!document.querySelector('[data-testid=stMain] h1')) return;
    const alerts = document.querySelectorAll('[data-testid=stSidebar] [data-testid=stAlert]');
    if ([...alerts].some(a => a.innerText.includes(mark))) { window.__tkUpAt = Date.now(); clearInterval(id); }
  }, 20);
})();"""


_SHOWN_JS = """() => ({
  state: document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state'),
  title: document.querySelector('[data-testid=stMain] h1')?.innerText,
  sidebar: [...document.querySelectorAll('[data-testid=stSidebar] [data-testid=stAlert]')].map(a => a.innerText),
})"""


def after_server_up(browser, base: str, titles: dict[str, str], lang: str) -> dict:
    """Every page open in its own tab while the embedded Triton starts (the app was just launched): seconds
    from Triton answering ready on :8000 until each tab shows it up and is interactive (all tabs at once:
    the worst case of a teacher with every page open)."""
    if _port_taken(8000):
        return {"skipped": "port 8000 is taken: the embedded server would use other ports"}
    ctx = browser.new_context()
    up_mark = lessons.ui_strings(lang)["sidebar.status_up"].split("{")[0].strip()
    ctx.add_init_script(_UP_WATCH_JS % json.dumps(up_mark))
    tabs = {}
    for url in titles:
        tabs[url] = ctx.new_page()
        tabs[url].goto(f"{base}/{url}?lang={lang}", wait_until="commit")
    deadline = time.monotonic() + 300
    while True:
        try:
            urllib.request.urlopen("http://127.0.0.1:8000/v2/health/ready", timeout=1)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit("Triton was not ready on :8000 within 300 s (see benchmarks/out/)") from None
            time.sleep(0.02)
    ready_ms = time.time() * 1000
    after = {}
    for url, tab in tabs.items():
        try:
            tab.wait_for_function("() => window.__tkUpAt !== null", polling=100, timeout=60_000)
        except Exception:  # noqa: BLE001 - report what the tab shows instead
            shown = tab.evaluate(_SHOWN_JS)
            raise SystemExit(
                f"{url}: not up and interactive 60 s after Triton was ready; it shows {shown}"
            ) from None
        after[url] = round((tab.evaluate("window.__tkUpAt") - ready_ms) / 1000, 2)
    ctx.close()
    return after


async def _script_run(ws_url: str, page: str, query: str) -> tuple[float, dict[str, int]]:
    """One new session runs ``page`` once: seconds until the script finished, and the elements it sent."""
    import asyncio

    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    elements: dict[str, int] = {}
    async with websockets.connect(ws_url, subprotocols=["streamlit"], max_size=None, open_timeout=30) as ws:
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = page
        t0 = time.perf_counter()
        await ws.send(msg.SerializeToString())
        while True:
            fm = ForwardMsg()
            fm.ParseFromString(await asyncio.wait_for(ws.recv(), 120))
            kind = fm.WhichOneof("type")
            if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                name = fm.delta.new_element.WhichOneof("type")
                elements[name] = elements.get(name, 0) + 1
            elif kind == "script_finished":
                return time.perf_counter() - t0, elements


def script_runs(base: str, pages: dict[str, str], query: str, reps: int) -> dict[str, dict]:
    """Per page: the median seconds of a new session's script run, and the heavy elements it draws."""
    import asyncio

    ws_url = base.replace("http://", "ws://") + "/_stcore/stream"
    out = {}
    for url, page in pages.items():
        runs = [asyncio.run(_script_run(ws_url, page, query)) for _ in range(reps)]
        heavy = {k: v for k, v in runs[-1][1].items() if k in HEAVY_ELEMENTS}
        out[url] = {"script": round(statistics.median(r[0] for r in runs), 2), "elements": heavy}
    return out


def _port_taken(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def median_pair(samples: list[tuple[float, float]]) -> dict[str, float]:
    return {
        "title": round(statistics.median(s[0] for s in samples), 2),
        "interactive": round(statistics.median(s[1] for s in samples), 2),
    }


def paired_fresh(page, floor, floor_first: bool) -> tuple[tuple[float, float], tuple[float, float]]:
    """One fresh-tab sample of a page and one of the floor app, taken one after the other (the floor first when
    ``floor_first``: rounds alternate, so neither side always follows the other). A page's ratio is the median
    of its pairs' ratios: on a shared VM whose CPU speed changes from one minute to the next (the same Python
    loop took 0.49-1.04 s within 30 s here), a floor measured once per round of 15 pages compared each page
    with a different machine."""
    if floor_first:
        floor_sample = floor()
        return page(), floor_sample
    page_sample = page()
    return page_sample, floor()


def fresh_round(
    opener,
    targets: dict[str, tuple[str, str]],
    floor_url: str | dict[str, str],
    reps: int,
    threads: dict | None,
) -> dict:
    """Every target's fresh tab ``reps`` times through ``opener`` (see :func:`fresh`), each paired with one of
    the floor app (:func:`paired_fresh`): the figures, the floor's, and each target's ratio to the floor.
    ``targets``: name -> (URL, the text its title shows); ``floor_url``: the floor's URL, or per target name;
    ``threads``: name (and "(floor app)") -> a dict that collects the tab's main-thread figures, or None."""
    floor: list = []
    samples: dict[str, list] = {u: [] for u in targets}
    ratios: dict[str, list] = {u: [] for u in targets}
    loads: dict[str, list] = {u: [] for u in targets}
    for rep in range(reps):
        for name, (url, text) in targets.items():
            floor_at = floor_url if isinstance(floor_url, str) else floor_url[name]
            page_sample, floor_sample = paired_fresh(
                lambda url=url, text=text, name=name: fresh(opener, url, text, threads and threads[name]),
                lambda floor_at=floor_at: fresh(
                    opener, floor_at, FLOOR_TITLE, threads and threads["(floor app)"]
                ),
                floor_first=rep % 2 == 0,
            )
            samples[name].append(page_sample)
            floor.append(floor_sample)
            ratios[name].append(page_sample[1] / floor_sample[1])
            loads[name].append(os.getloadavg()[0])
    return {
        "floor": median_pair(floor)
        | {"range": [round(min(f[1] for f in floor), 2), round(max(f[1] for f in floor), 2)]},
        "fresh": {u: median_pair(s) for u, s in samples.items()},
        "fresh_ratio_to_floor": {u: round(statistics.median(r), 2) for u, r in ratios.items()},
        "fresh_ratio_range": {u: [round(min(r), 2), round(max(r), 2)] for u, r in ratios.items()},
        "fresh_ratios": {u: [round(x, 3) for x in r] for u, r in ratios.items()},
        "load": {u: round(statistics.median(v), 2) for u, v in loads.items()},
    }


def learners_browser(browser, floor_url: str, targets: dict[str, tuple[str, str]]):
    """A browser context whose cache holds the floor's and every target's scripts (each opened once): its new
    tabs are a learner's next tabs. (browser.new_page() opens each tab in a profile of its own, empty cache.)"""
    learner = browser.new_context()
    for url, text in [(floor_url, FLOOR_TITLE), *targets.values()]:
        fresh(learner, url, text)
    return learner


def wait_for_triton(browser, base: str, lang: str):
    """A tab of the app on ch1 until its run button is enabled (Triton is up), then on about:blank: an open
    page's status poll (a fragment rerun every 1.5 s) keeps about 12 % of a core busy in Chromium, taken from
    the tabs being timed. Returns the tab."""
    tab = browser.new_page()
    tab.goto(f"{base}/ch1?lang={lang}")
    tab.wait_for_selector("button[kind=primary]:not([disabled])", timeout=180_000)
    tab.goto("about:blank")
    return tab


def page_titles(lang: str, teacher: bool = False) -> dict[str, str]:
    """Every page's URL path (``home`` for the welcome page) -> its title in ``lang``, what its h1 shows; with
    ``teacher``, the teacher's desk too (a class's teacher's page)."""
    ui = lessons.ui_strings(lang)
    titles = {"home": ui["app.title"]}
    titles |= {f"ch{n}": lessons.load_lesson(n, lang).title for n in lessons.CHAPTERS}
    titles |= {page.url: ui[f"{Path(page.path).stem}.title"] for page in LABS}
    return titles | ({TEACHER.url: ui["teacher.title"]} if teacher else {})


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lang", default="en", choices=lessons.LANGS)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument(
        "--up-tabs", default="all", help="pages open while Triton starts: all, none, or a comma list"
    )
    parser.add_argument(
        "--pages",
        help="only these pages (a comma list, e.g. ch1,lab-flow; teacher: the teacher's desk): fresh tabs only,"
        " no in-tab round unless --in-tab-reps is given",
    )
    parser.add_argument(
        "--floor",
        default="nav",
        choices=FLOORS,
        help="nav: the course's navigation shell; title: a title only",
    )
    parser.add_argument("--no-first-visit", action="store_true", help="skip the empty-cache round")
    parser.add_argument(
        "--in-tab-reps", type=int, help="rounds through every page in one tab (default --reps)"
    )
    parser.add_argument("--script-reps", type=int, help="script runs per page (default --reps)")
    parser.add_argument(
        "--retry-failing", action="store_true", help="measure the pages over the target once more"
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    wanted_pages = (args.pages or "").split(",")
    teacher = TEACHER.url in wanted_pages
    titles = page_titles(args.lang, teacher=teacher)
    every_page = dict(titles)
    named = [u for u in f"{args.pages or ''},{args.up_tabs}".split(",") if u not in ("", "all", "none")]
    if unknown := [u for u in named if u not in every_page]:
        parser.error(f"no such page: {', '.join(unknown)} (pages: {', '.join(every_page)})")
    if args.pages:
        titles = {u: titles[u] for u in wanted_pages}
    in_tab_reps = args.in_tab_reps if args.in_tab_reps is not None else (0 if args.pages else args.reps)
    script_reps = args.script_reps if args.script_reps is not None else args.reps
    class_env = {}
    if teacher:  # a class: the token set, its own class database (not the learner's)
        OUT.mkdir(parents=True, exist_ok=True)
        db = OUT / "page_timing_class.db"
        class_env = {TEACHER_TOKEN_ENV: BENCH_TOKEN, DATABASE_URL_ENV: f"sqlite:///{db}"}
    token_q = f"&teacher={BENCH_TOKEN}" if teacher else ""
    result: dict = {"fresh": {}, "in_tab": {}, "floor_app": FLOORS[args.floor], "uptime_start": uptime()}
    print("start:", result["uptime_start"], flush=True)
    floor_app, floor_base = start_app(FLOORS[args.floor])
    app, base = start_app("app.py", class_env)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            wanted = titles if args.up_tabs == "all" else [u for u in args.up_tabs.split(",") if u != "none"]
            up_tabs = {u: every_page[u] for u in wanted}
            skipped = {"skipped": "--up-tabs none"}
            result["server_up"] = after_server_up(browser, base, up_tabs, args.lang) if up_tabs else skipped
            first = wait_for_triton(browser, base, args.lang)
            floor_url = f"{floor_base}/?lang={args.lang}"
            targets = {u: (f"{base}/{u}?lang={args.lang}{token_q}", t) for u, t in titles.items()}
            # the teacher's tab lists the teacher's page in its navigation: so does its shell
            floor_urls = {u: floor_url + (token_q if u == TEACHER.url else "") for u in targets}
            learner = learners_browser(browser, floor_url + token_q, targets)
            threads: dict[str, dict] = {"(floor app)": {}} | {u: {} for u in titles}
            result |= fresh_round(learner, targets, floor_urls, args.reps, threads)
            print("fresh round done:", uptime(), flush=True)
            failing = {u: targets[u] for u, r in result["fresh_ratio_to_floor"].items() if r > FRESH_TARGET}
            if args.retry_failing and failing:
                again = fresh_round(learner, failing, floor_urls, args.reps, None)
                result["retry"] = {
                    "uptime": uptime(),
                    "ratio_to_floor": again["fresh_ratio_to_floor"],
                    "ratio_range": again["fresh_ratio_range"],
                    "ratios": again["fresh_ratios"],
                    "load": again["load"],
                    "floor": again["floor"],
                }
            if args.no_first_visit:
                result["first_visit"] = {"skipped": "--no-first-visit"}
            else:
                first_visit = fresh_round(browser, targets, floor_urls, args.reps, None)
                result["first_visit"] = {
                    "floor": first_visit["floor"],
                    "ratio_to_floor": first_visit["fresh_ratio_to_floor"],
                    "ratio_range": first_visit["fresh_ratio_range"],
                }
            result["main_thread"] = {
                u: {k: round(statistics.median(v), 2) for k, v in m.items()} for u, m in threads.items()
            }
            first.goto(f"{base}/ch1?lang={args.lang}{token_q}")
            first.wait_for_selector("button[kind=primary]:not([disabled])", timeout=60_000)
            order = [u for u in titles if u != "ch1"] + ["ch1"] * ("ch1" in titles)  # the tab starts on ch1
            samples: dict[str, list] = {u: [] for u in order}
            for _ in range(in_tab_reps):  # moving through every page, in one tab
                for url in order:
                    nav = first.locator("[data-testid=stSidebarNav] a")
                    link = nav.first if url == "home" else nav.and_(first.locator(f"[href$='/{url}']")).first
                    samples[url].append(arrive(first, titles[url], link.click))
                    time.sleep(0.5)
            result["in_tab"] = {u: median_pair(s) for u, s in samples.items() if s}
            browser.close()
        query = f"lang={args.lang}{token_q}"
        result["script"] = script_runs(floor_base, {"(floor app)": ""}, query, script_reps)
        result["script"] |= script_runs(
            base, {u: ("" if u == "home" else u) for u in titles}, query, script_reps
        )
        result["uptime_end"] = uptime()
    finally:
        for proc in (app, floor_app):
            proc.terminate()
            proc.wait(20)
    floor_s = result["floor"]["interactive"]
    print(f"floor: {FLOORS[args.floor]}; {args.reps} pairs per page; {args.lang}")
    head = (
        f"{'page':14s} {'fresh title':>11s} {'interactive':>11s} {'÷ floor':>8s} {'pairs':>9s} {'load':>5s}"
        f" {'1st visit':>9s} {'in-tab title':>12s}"
    )
    print(f"{head} {'interactive':>11s} {'script':>7s} {'main thread':>11s}  heavy elements")
    floor_script = result["script"]["(floor app)"]["script"]
    floor_mt = result["main_thread"]["(floor app)"]
    print(
        f"{'(floor app)':14s} {result['floor']['title']:11.2f} {floor_s:11.2f} {1:8.2f} {'':9s} {'':5s}"
        f" {1:9.2f} {'':12s} {'':11s}"
        f" {floor_script:7.2f} {floor_mt['tasks']:11.2f}"
    )
    first_ratios = result["first_visit"].get("ratio_to_floor", {})
    for url in titles:
        f, sc = result["fresh"][url], result["script"][url]
        i = result["in_tab"].get(url, {"title": float("nan"), "interactive": float("nan")})  # --pages: none
        ratio = result["fresh_ratio_to_floor"][url]
        lo, hi = result["fresh_ratio_range"][url]
        heavy = ", ".join(f"{k} {v}" for k, v in sorted(sc["elements"].items()))
        print(
            f"{url:14s} {f['title']:11.2f} {f['interactive']:11.2f} {ratio:8.2f} {f'{lo:.2f}-{hi:.2f}':>9s}"
            f" {result['load'][url]:5.2f} {first_ratios.get(url, float('nan')):9.2f}"
            f" {i['title']:12.2f}"
            f" {i['interactive']:11.2f} {sc['script']:7.2f} {result['main_thread'][url]['tasks']:11.2f}  {heavy}"
        )
    lo, hi = result["floor"]["range"]
    print(
        f"the floor app took {lo:.2f}-{hi:.2f} s over the run; a page's ratio is the median of its pairs' ratios"
    )
    slow_fresh = [u for u, r in result["fresh_ratio_to_floor"].items() if r > FRESH_TARGET]
    if "retry" in result:
        retry = result["retry"]
        print(f"re-measured once ({args.reps} pairs each; {retry['uptime']}):")
        for url, r in retry["ratio_to_floor"].items():
            lo, hi = retry["ratio_range"][url]
            print(f"  {url:12s} {r:5.2f} (pairs {lo:.2f}-{hi:.2f}, load {retry['load'][url]:.2f})")
    slow_first = [u for u, r in first_ratios.items() if r > FRESH_TARGET]
    slow_tab = [u for u, v in result["in_tab"].items() if v["interactive"] > IN_TAB_TARGET_S]
    result["targets"] = {
        "fresh_over_1.3x": slow_fresh,
        "first_visit_over_1.3x": slow_first,
        "in_tab_over_1s": slow_tab,
    }
    print(
        f"fresh tab within {FRESH_TARGET}x the floor: {len(titles) - len(slow_fresh)}/{len(titles)} pages"
        + (f" (over: {', '.join(slow_fresh)})" if slow_fresh else "")
    )
    if first_ratios:
        lo, hi = result["first_visit"]["floor"]["range"]
        print(
            f"first visit (empty cache; the floor took {lo:.2f}-{hi:.2f} s) within {FRESH_TARGET}x the floor's:"
            f" {len(titles) - len(slow_first)}/{len(titles)} pages"
            + (f" (over: {', '.join(slow_first)})" if slow_first else "")
        )
    if result["in_tab"]:
        print(
            f"in an open tab within {IN_TAB_TARGET_S:.0f} s: {len(titles) - len(slow_tab)}/{len(titles)} pages"
            + (f" (over: {', '.join(slow_tab)})" if slow_tab else "")
        )
    up = result["server_up"]
    if "skipped" in up:
        print("after server up:", up["skipped"])
    else:
        print(
            "seconds from Triton ready until each open tab shows it up and is interactive (all tabs at once):"
        )
        print("  " + "  ".join(f"{u} {v:.2f}" for u, v in up.items()) + f"   max {max(up.values()):.2f}")
    print("start:", result["uptime_start"])
    print("end:  ", result.get("uptime_end", ""))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
