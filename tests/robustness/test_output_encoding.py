"""Issue 22 item 11: a report naming a non-ASCII identifier, printed to a
stream that cannot encode it, is written escaped, never an internal error."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROGRAM = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 1),))
class Ünï:
    @func
    def f(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        with Mesh(("cta",), (1,), ("c",)) as _m:
            return x + x
'''


@pytest.mark.parametrize("argv", [["analyze", "--compute-cost"], ["run"], ["analyze"]])
def test_non_ascii_names_are_escaped_on_an_ascii_stream(tmp_path, argv):
    source = tmp_path / "uni.py"
    source.write_text(PROGRAM, encoding="utf-8")
    env = dict(os.environ, PYTHONIOENCODING="ascii")
    done = subprocess.run([sys.executable, "-m", "tilefoundry", *argv, str(source)], env=env,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b""
    if argv[-1] == "--compute-cost":
        assert b"module=\\xdcn\\xef" in done.stdout
