"""Issue 22 item 2: a return annotation the body does not produce (shape or
dtype) is refused at the return, naming both types; layout and storage are
not part of the comparison (an annotation states the logical type)."""
from __future__ import annotations

import pytest

from tilefoundry.cli.main import main

HEAD = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 1),))
class R:
    @func
    def f(x: Tensor[(256, 128), "f32"]) -> {annotation}:
        with Mesh(("cta",), (1,), ("c",)) as _m:
            y = x * x
            return {returned}
'''


def _analyze(tmp_path, capsys, annotation, returned="y"):
    source = tmp_path / "ret.py"
    source.write_text(HEAD.format(annotation=annotation, returned=returned))
    code = main(["analyze", "--compute-cost", str(source)])
    out, err = capsys.readouterr()
    return code, out, err.strip(), source


@pytest.mark.parametrize("annotation,declared", [
    ('Tensor[(7, 7), "bf16"]', 'Tensor[(7, 7), "bf16"]'),
    ('Tensor[(256, 128), "bf16"]', 'Tensor[(256, 128), "bf16"]'),
    ('Tensor[(128, 256), "f32"]', 'Tensor[(128, 256), "f32"]'),
])
def test_a_wrong_return_annotation_is_refused_at_the_return(tmp_path, capsys, annotation, declared):
    code, out, err, source = _analyze(tmp_path, capsys, annotation)
    assert code == 1 and out == ""
    line = next(k for k, text in enumerate(source.read_text().splitlines(), 1) if "return y" in text)
    column = source.read_text().splitlines()[line - 1].index("return") + 1
    assert err == (f"tilefoundry: error: {source}:{line}:{column}: 'f' declares it returns {declared} "
                   'but its body returns Tensor[(256, 128), "f32"]; correct the annotation '
                   '(-> Tensor[(256, 128), "f32"]) or the returned value')


def test_the_right_annotation_and_a_placed_storage_still_analyse(tmp_path, capsys):
    code, _, err, _ = _analyze(tmp_path, capsys, 'Tensor[(256, 128), "f32"]')
    assert (code, err) == (0, "")
    code, _, err, _ = _analyze(tmp_path, capsys, 'Tensor[(256, 128), "f32", "gmem"]',
                               returned='tf.reshard(y, (256, 128), "gmem")')
    assert (code, err) == (0, "")
