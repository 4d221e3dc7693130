"""Repository browser helpers: models on disk (the catalogue), the server's view, read-only opening under
a root, ensemble checks.

The tests of this topic that need no server, app or browser: tests/unit/test_repository.py."""

from __future__ import annotations

import conftest
import pytest
from _shared.repository import EXPECTED, LOADED_ON_FIRST_USE

from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.settings import REPOSITORY_ROOT_ENV
from triton_kitchen.tools import repository as repo


@pytest.mark.timing
def test_server_status_embedded(server):
    status = repo.server_status(server.endpoint)
    assert status.up and status.version.startswith("2.51")
    names = {m.name for m in status.models}
    assert EXPECTED <= names
    # ready, or a drill's model waiting for its first use (never a failed load)
    assert all(m.ready or m.on_first_use for m in status.models if m.name in EXPECTED), status.models
    assert all(m.ready for m in status.models if m.name in EXPECTED - LOADED_ON_FIRST_USE), status.models
    assert status.checked_ms < 2000


def test_server_status_without_repository_key(server):
    """A remote server may refuse the repository index: readiness comes from each model instead."""
    status = repo.server_status(Endpoint(server.http_url, server.grpc_url))
    assert status.up and status.state_of("classifier").ready


def test_loaded_config_text(server):
    text = repo.loaded_config_text(server.endpoint, "classifier")
    assert 'name: "classifier"' in text and "max_queue_delay_microseconds" in text


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_ch1_other_repository_stays_under_the_root(server, monkeypatch, lang):
    """ch1's "open another repository": a folder outside the root is refused with a message, one inside
    opens (uploads: test_uploaded_configs_are_only_parsed)."""
    from conftest import switch_page
    from streamlit.testing.v1 import AppTest

    from triton_kitchen.core import lessons

    conftest.use_remote(monkeypatch, server)
    monkeypatch.delenv(REPOSITORY_ROOT_ENV, raising=False)
    at = AppTest.from_file(str(repo.REPO_ROOT / "app.py"), default_timeout=60)
    at.query_params["lang"] = lang
    switch_page(at, "views/ch1_inference_server.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(str(repo.repository_root()) in c.value for c in at.caption)  # the help names the root
    at.text_input(key="ch1_other_path").set_value("/etc").run()
    assert not at.exception
    assert [e.value for e in at.error] == [lessons.t("error.repo_outside_root", lang)]
    before = len(at.dataframe)
    at.text_input(key="ch1_other_path").set_value("model_repository").run()
    assert not at.exception and not at.error
    assert len(at.dataframe) > before  # the other repository's table and its models' tables
    assert any("cascade_bls" in m.value for m in at.markdown)
