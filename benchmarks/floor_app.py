"""The floor for benchmarks/page_timing.py: a Streamlit app that only shows a title.

Its fresh-tab time is what Streamlit's own frontend start-up costs on this machine and browser.
"""

import streamlit as st

st.title("Triton Kitchen floor")
