"""Chapter 8."""

from ui.lesson import render_lesson

render_lesson(8)
