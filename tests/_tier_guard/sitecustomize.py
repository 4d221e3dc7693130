"""Loaded by child Python processes of a fast-tier run (tests/_tiers.py puts this folder on PYTHONPATH):
the same refusal of tritonserver, Chromium and streamlit as in the test process."""

import os

if os.environ.get("TRITON_KITCHEN_NO_LIVE"):
    from live_guard import forbid_live_processes

    forbid_live_processes()
