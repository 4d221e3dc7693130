"""benchmarks/floor_app.py with a sidebar holding one caption: what Streamlit's sidebar itself costs a fresh tab
(benchmarks/shell_timing.py)."""

import streamlit as st

st.title("Triton Kitchen floor")
st.sidebar.caption("A sidebar and nothing else in it.")
