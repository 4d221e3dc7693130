"""Chapter 4."""

from ui.lesson import render_lesson

render_lesson(4)
