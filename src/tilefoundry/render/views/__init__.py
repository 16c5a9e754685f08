"""The views beside the report (docs/views.md): rows of headline figures (a
``--dim`` sweep, targets side by side), the costliest statements (``--top``),
the trace events (``--trace``), the HTML page (``--html``) and its SVG charts
(``--plot``). Each reads one report or result; none formats a number the
report's own forms do not."""
