"""The Triton doctor's page in Chromium: Stop ends an examination at once and the page says it was stopped; the
next examination runs to its report card, chart and download. (What the page says in each language, and its bad
input: tests/live/test_lab_doctor_live.py, tests/unit/test_lab_doctor.py.)"""

from __future__ import annotations

import time

import pytest
from _rendered_cjk import RENDERED_TEXT_JS, cjk_rendering_defects
from _screen_checks import BROWSER_READ, problems_on_screen
from conftest import open_in_browser, shoot, wait_for_app_run
from playwright.sync_api import expect

from triton_kitchen.core.lessons import t

pytestmark = pytest.mark.browser


def _script_state(page) -> str:
    return page.evaluate(
        "document.querySelector('[data-testid=stApp]').getAttribute('data-test-script-state')"
    )


def test_stop_ends_an_examination_and_the_next_one_reports(app_url, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto(f"{app_url}/lab-doctor?lang=en", wait_until="domcontentloaded")
        wait_for_app_run(page)
        page.get_by_role("button", name=t("lab_doctor.run", "en")).click()
        page.wait_for_selector("[data-testid=stProgress]", timeout=30_000)
        page.locator(".st-key-doctor_stop button").first.click()
        t0 = time.monotonic()
        while _script_state(page) != "notRunning" and time.monotonic() - t0 < 30:
            time.sleep(0.1)
        stopped = time.monotonic() - t0
        assert stopped < 5, f"the examination ran on {stopped:.1f} s after Stop"  # a quick one takes ~25 s
        expect(page.get_by_text(t("lab_doctor.stopped", "en"))).to_be_visible(timeout=10_000)
        assert page.locator('[data-testid="stException"]').count() == 0

        page.get_by_role("button", name=t("lab_doctor.run", "en")).click()
        expect(page.get_by_role("heading", name=t("lab_doctor.card", "en"))).to_be_visible(timeout=150_000)
        shoot(page, "lab_doctor_report_en")
        expect(page.locator("[data-testid=stPlotlyChart]")).to_be_visible(timeout=10_000)
        expect(page.get_by_role("button", name=t("lab_doctor.download", "en"))).to_be_visible()
        assert page.get_by_text(t("lab_doctor.stopped", "en")).count() == 0
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        page.close()


def test_the_report_in_chinese_as_chromium_lays_it_out(app_url, browser):
    """The page in Chinese before and after an examination: nothing wrong on screen, Chinese rendered right (the
    card, the chart's words, the status)."""
    page = open_in_browser(browser, f"{app_url}/lab-doctor?lang=zh", viewport=(1400, 900))
    try:
        found = problems_on_screen(page.evaluate(BROWSER_READ), "zh")
        page.get_by_role("button", name=t("lab_doctor.run", "zh")).click()
        expect(page.get_by_role("heading", name=t("lab_doctor.card", "zh"))).to_be_visible(timeout=150_000)
        wait_for_app_run(page)
        found += problems_on_screen(page.evaluate(BROWSER_READ), "zh")
        found += cjk_rendering_defects(page.evaluate(RENDERED_TEXT_JS))
        shoot(page, "lab_doctor_report_zh")
        assert not found, found
    finally:
        page.close()
