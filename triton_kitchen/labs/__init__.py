"""Labs: each chapter's or lab's live experiments, one module each. A lab imports the core and tools, never
another lab."""
