"""Streamlit helpers the pages share: state (language, server, model), sidebar, image picker, lessons."""
