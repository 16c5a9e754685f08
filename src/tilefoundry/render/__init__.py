"""Rendering: the only room where text, JSON, SVG or HTML is made.

At the top, what every rendering shares: ``values`` (every value form),
``printer`` (the annotated program), ``record_forms`` (how a record reads: the
generic form from its fields, and the registry of family forms), ``report``
(text and JSON from one ``render_analysis``) and ``json_contract``. Each family's
forms are in ``forms/`` (``<family>_forms.py``, loaded when a record of that
family is first rendered); the views built on a report are in ``views/``.
"""
