"""benchmarks/floor_app.py with a sidebar holding one caption: what Streamlit's sidebar itself costs a fresh tab
(benchmarks/shell_timing.py)."""

import streamlit as st
from _floor import floor_title

floor_title()
st.sidebar.caption("A sidebar and nothing else in it.")
