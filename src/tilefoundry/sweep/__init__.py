"""Design-space sweeps (`tilefoundry sweep`, docs/views.md "Sweeps"): a space
of selections x dims x targets x topology levels (``space.py``), run in
batches on local worker processes or a Dask cluster (``engine.py``,
``backends.py``, ``worker.py``) into a CSV or Parquet table (``table.py``),
summarised by best point, Pareto front and charts (``summary.py``).

Above ``render`` and beside the facades: a worker analyses its points through
the Python API (``tilefoundry.api.figures``), so a row is what ``analyze``
states. Importing this package imports nothing heavy (a Dask worker imports
``tilefoundry.sweep.worker`` to run a batch).
"""
