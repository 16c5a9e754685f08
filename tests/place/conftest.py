"""Fixtures the place tests share."""
import pytest


@pytest.fixture
def unweighted_split_combine(monkeypatch):
    """A planted flash-decoding fault: the splits' sums combined without their
    weights (each split's own maximum), the attention piece held to points of two
    splits or more (with one, the fault changes nothing). Gives the restricted
    points function."""
    from tilefoundry.placer import sequence_attention, sequence_search

    real = sequence_attention.core_block

    def unweighted(piece, ctas, setting, level):
        return [line.replace("tf.reduce(run_sum * weight,", "tf.reduce(run_sum,")
                for line in real(piece, ctas, setting, level)]

    points = sequence_search._attention_points

    def split(piece, budget):
        return [(ctas, (heads, block)) for ctas, (heads, block) in points(piece, budget) if ctas // heads > 1]

    monkeypatch.setattr(sequence_attention, "core_block", unweighted)
    monkeypatch.setattr(sequence_search, "_attention_points", split)
    return split


def kernel_source(signature: str, body: str, *, before: tuple = (), entry: str = "f",
                  target: str = "nvidia.h200_sxm") -> str:
    """A logical kernel's file: one Module on ``target`` declaring 132 CTAs, its
    one function ``entry(signature)`` running the statements ``before`` and
    returning ``body`` (a test writes it to tmp_path and places it)."""
    statements = "".join(f"        {line}\n" for line in before)
    return f'''from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="{entry}", target=CudaTarget("{target}"), topologies=(Topology("cta", 132),))
class Logical:
    @func
    def {entry}{signature}:
{statements}        return {body}
'''
