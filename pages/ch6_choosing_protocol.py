"""Chapter 6."""

from ui.lesson import render_lesson

render_lesson(6)
