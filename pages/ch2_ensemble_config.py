"""Chapter 2."""

from ui.lesson import render_lesson

render_lesson(2)
