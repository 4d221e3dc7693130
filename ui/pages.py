"""The app's page table: every chapter and lab, its file, URL and title key (data, not code).

``app.py`` builds the navigation from it and the tests find a page's URL here; a URL path is part of
the links teachers share, so it never changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class PageSpec:
    path: str  # the page's script, relative to the project root
    url: str  # its URL path (/ch1, /lab-flow)
    title_key: str  # its title in ui.toml
    icon: str


CHAPTERS = [
    PageSpec("views/ch1_inference_server.py", "ch1", "page.ch1", "🧑‍🍳"),
    PageSpec("views/ch2_ensemble_config.py", "ch2", "page.ch2", "📝"),
    PageSpec("views/ch3_multi_model.py", "ch3", "page.ch3", "🏭"),
    PageSpec("views/ch4_http.py", "ch4", "page.ch4", "🌐"),
    PageSpec("views/ch5_grpc.py", "ch5", "page.ch5", "⚡"),
    PageSpec("views/ch6_choosing_protocol.py", "ch6", "page.ch6", "🧭"),
    PageSpec("views/ch7_python_client.py", "ch7", "page.ch7", "🐍"),
    PageSpec("views/ch8_mistakes.py", "ch8", "page.ch8", "🎯"),
    PageSpec("views/ch9_scheduler.py", "ch9", "page.ch9", "🚦"),
    PageSpec("views/ch10_operations.py", "ch10", "page.ch10", "🛎️"),
    PageSpec("views/ch11_generation.py", "ch11", "page.ch11", "✍️"),
]
LABS = [
    PageSpec("views/lab_protocols.py", "lab-protocols", "page.lab_protocols", "📊"),
    PageSpec("views/lab_batching.py", "lab-batching", "page.lab_batching", "🍱"),
    PageSpec("views/lab_flow.py", "lab-flow", "page.lab_flow", "🔀"),
    PageSpec("views/lab_break.py", "lab-break", "page.lab_break", "🔨"),
    PageSpec("views/lab_doctor.py", "lab-doctor", "page.lab_doctor", "🩺"),
]
PAGES = [*CHAPTERS, *LABS]
HOME_URL = ""  # the welcome page, at /
HOME_ALIAS_URL = "home"  # the same page at /home (a link or a habit may use it)


def url_of(path: str) -> str:
    """The URL path of the page whose script is ``path`` (``views/lab_flow.py`` -> ``lab-flow``)."""
    for page in PAGES:
        if page.path == path:
            return page.url
    raise KeyError(f"no page for {path}")


# the teacher's desk: in the navigation only for a class's teacher (``i18n.teacher_view_on``), not in PAGES
TEACHER = PageSpec("views/teacher.py", "teacher", "page.teacher", "🧑‍🏫")
