"""The placer's axis model (placer/loop_axes.py): which axes of a value some op
reads across (closed) and which are data-parallel. A softmax reads across its
own axis, whichever it is; a norm across the last (docs/ops.md)."""
import pytest

from tilefoundry import api
from tilefoundry.placer.kernel import _calls
from tilefoundry.placer.loop_axes import Axes, _join_call

_SOURCE = '''from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class Softmax:
    @func
    def f(x: Tensor[(64, 32), "f32"]) -> Tensor[(64, 32), "f32"]:
        return tf.softmax(x, {axis})
'''


@pytest.mark.parametrize("axis, across", [(0, 0), (1, 1), (-1, 1)])
def test_a_softmax_reads_across_its_own_axis_only(tmp_path, axis, across):
    source = tmp_path / f"softmax_{axis}.py"
    source.write_text(_SOURCE.format(axis=axis), encoding="utf-8")
    (call,) = _calls(api.analyze(str(source)).function, "test")
    axes = Axes()

    def key(node, a):
        found = (id(node), a)
        axes.find(found)
        return found

    _join_call(axes, key, call)
    closed = {a for a in (0, 1) if axes.find((id(call), a)) in axes.closed}
    assert closed == {across}
    kept = 1 - across  # the other axis: the operand's and the result's are one class
    assert axes.find((id(call), kept)) == axes.find((id(call.args[0]), kept))
