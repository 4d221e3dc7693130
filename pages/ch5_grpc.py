"""Chapter 5."""

from ui.lesson import render_lesson

render_lesson(5)
