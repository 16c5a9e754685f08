"""The placer's axis model (placer/loop_axes.py): which axes of a value some op
reads across (closed) and which are data-parallel. It follows the analysis's
relations (companions: "the normalized axis onward is free"): a softmax reads
whole rows from its axis onward, whichever axis that is, so the placer never
proposes a split the analysis refuses."""
import pytest

from tilefoundry import api
from tilefoundry.placer.kernel import _calls
from tilefoundry.placer.loop_axes import Axes, _join_call
from tests.place.conftest import kernel_source


@pytest.mark.parametrize("axis, across", [(0, {0, 1}), (1, {1}), (-1, {1})])
def test_a_softmax_reads_across_its_axis_onward(tmp_path, axis, across):
    source = tmp_path / f"softmax_{axis}.py"
    source.write_text(kernel_source('(x: Tensor[(64, 32), "f32"]) -> Tensor[(64, 32), "f32"]', f"tf.softmax(x, {axis})"),
                      encoding="utf-8")
    (call,) = _calls(api.analyze(str(source)).function, "test")
    axes = Axes()

    def key(node, a):
        found = (id(node), a)
        axes.find(found)
        return found

    _join_call(axes, key, call)
    closed = {a for a in (0, 1) if axes.find((id(call), a)) in axes.closed}
    assert closed == across
    for kept in {0, 1} - across:  # a row axis: the operand's and the result's are one class
        assert axes.find((id(call), kept)) == axes.find((id(call.args[0]), kept))
