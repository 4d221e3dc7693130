"""The floor for benchmarks/page_timing.py: a Streamlit app that only shows a title (``?lang=zh``: with a Chinese
word, see benchmarks/_floor.py).

Its fresh-tab time is what Streamlit's own frontend start-up costs on this machine and browser.
"""

from _floor import floor_title

floor_title()
