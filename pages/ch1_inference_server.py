"""Chapter 1."""

from ui.lesson import render_lesson

render_lesson(1)
