"""Chinese as Chromium renders it: what the zh Chromium pass (tests/browser/test_browser.py) reads on every page once all its boxes are open.

A soft line break between two Chinese characters shows as a space, and `**` next to Chinese punctuation can
stay literal (CommonMark's flanking rules).
"""

from __future__ import annotations

import re

_IDEOGRAPHS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_FULL_WIDTH = "\u3001-\u303f\uff01-\uffef"  # 。、「」 and ，：（）！？, which carry their own spacing
# `**`, or a `*` touching Chinese text: an emphasis delimiter CommonMark left literal
_LITERAL_EMPHASIS = f"(?<=[{_IDEOGRAPHS}{_FULL_WIDTH}])\\*+|\\*\\*+|\\*+(?=[{_IDEOGRAPHS}{_FULL_WIDTH}])"
# a space between two Chinese characters or beside a full-width mark: the lessons never mean one. Curly
# quotes and dashes serve English too, and the lessons put a space beside them around English words on
# purpose (`或 “unused”`): they are not in the check.
_STRAY_SPACE = (
    f"[{_IDEOGRAPHS}][ \u00a0]+[{_IDEOGRAPHS}]|[{_FULL_WIDTH}][ \u00a0]+\\S|\\S[ \u00a0]+[{_FULL_WIDTH}]"
)
RENDERED_TEXT_JS = """() => {
  // the main block and the sidebar as rendered, with every code element (and chart) masked, closed
  // expanders opened and hidden tabs shown; laid out off screen so innerText applies the page's CSS
  const parts = [];
  for (const sel of ['[data-testid="stMain"]', '[data-testid="stSidebar"]']) {
    const root = document.querySelector(sel);
    if (!root) continue;
    const clone = root.cloneNode(true);
    clone.querySelectorAll('details').forEach(d => d.setAttribute('open', ''));
    clone.querySelectorAll('[hidden]').forEach(e => e.removeAttribute('hidden'));
    clone.querySelectorAll('pre, code, .tk-code, svg, canvas, textarea, script, style, .js-plotly-plot')
      .forEach(e => e.replaceWith(document.createTextNode('\u27e6code\u27e7')));
    clone.style.position = 'absolute';
    clone.style.left = '-30000px';
    clone.style.top = '0';
    clone.style.width = root.clientWidth + 'px';
    document.body.appendChild(clone);
    parts.push(clone.innerText);
    clone.remove();
  }
  return parts.join('\\n');
}"""


def cjk_rendering_defects(text: str) -> list[str]:
    """Each emphasis marker left literal and each stray space in Chinese text, with a little context."""
    found = [
        f"**: {text[max(m.start() - 12, 0) : m.end() + 12]!r}" for m in re.finditer(_LITERAL_EMPHASIS, text)
    ]
    found += [
        f"space: {text[max(m.start() - 8, 0) : m.end() + 8]!r}" for m in re.finditer(_STRAY_SPACE, text)
    ]
    return found
