"""Chapter 7."""

from ui.lesson import render_lesson

render_lesson(7)
