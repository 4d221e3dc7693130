"""Chapter 3."""

from ui.lesson import render_lesson

render_lesson(3)
