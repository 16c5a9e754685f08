"""Public paths of the core IR vocabulary (authoring.md §1.1)."""
