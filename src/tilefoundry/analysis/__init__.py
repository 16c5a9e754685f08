"""The analysis families and the framework they rest on (analysis spec §1–§2).

At the top, the framework: ``check`` (``check_program``, the gate before any
analysis), ``analyze`` (the dependency-composed ``analyze``), ``descriptor``
(Analyzer descriptors and the contexts a run reads), ``scope`` (Scope and
Access), ``view`` (the inlined, record-bearing view), ``dim_binding`` (binding
``--dim``, variants) and ``recomputation`` (how often each node runs).

One module or folder per family, as the spec names them: ``compute_cost``,
``memory/``, ``roofline``, ``performance/``, ``collectives/``. A Target names
each family's ``ANALYZER`` by that path (``tilefoundry.analysis.memory:ANALYZER``).
The buffer packer the memory family calls is the room ``tilefoundry.packing``.
"""
