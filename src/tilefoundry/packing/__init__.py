"""The buffer packer: plain intervals and sizes in, offsets out.

``pack`` settles one capacity question (fits at once, cannot fit, first fit
with room to spare, or a MiniMalloc-style canonical search with CP-SAT behind
it for proofs); ``packing_faults`` is the independent validator;
``read_buffers_csv`` reads the MiniMalloc CSV format. Imports nothing of
tilefoundry's but the package-root ``arguments``, ``errors``, ``limits`` and ``text_input``,
so the memory family and ``tilefoundry pack`` share it.
"""
from tilefoundry.packing.problem import Buffer, PackingResult, packed_height, peak_live
from tilefoundry.packing.solve import pack
from tilefoundry.packing.validate import packing_faults

__all__ = ["Buffer", "PackingResult", "pack", "packed_height", "packing_faults", "peak_live"]
