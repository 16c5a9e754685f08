"""authoring.md §1: the import surface."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.dsl.dsl_helpers import needs_ops


def test_1_1_dsl_all_is_the_reference_list():
    import tilefoundry.dsl as dsl

    assert dsl.__all__ == [
        "tf", "T", "ConstTensor", "Tensor", "func", "Pattern", "DimVarRangePat", "DimVar", "ceildiv",
        "Mesh", "Topology", "Split", "Partial", "Broadcast", "S", "P", "B",
        "ReduceKind", "UnaryKind", "BinaryKind",
    ]


@needs_ops
def test_1_1_star_import_binds_all_and_no_builtins():
    namespace: dict = {}
    exec("from tilefoundry.dsl import *\nfrom tilefoundry.dsl.tf import *", namespace)
    for name in ("tf", "T", "Tensor", "ConstTensor", "func", "DimVar", "ReduceKind", "matmul", "reshard"):
        assert name in namespace
    for name in ("range", "tile", "tuple", "len", "int", "float", "zip", "enumerate", "module"):
        assert name not in namespace
    assert "max" in namespace and "abs" in namespace  # the tf star import shadows these builtins


def test_1_1_one_class_per_concept():
    import tilefoundry
    import tilefoundry.dsl as dsl
    import tilefoundry.ir.core.pattern as pattern
    import tilefoundry.ir.types.dim as tdim
    import tilefoundry.ir.types.shard as tshard

    assert dsl.DimVar is tdim.DimVar is tilefoundry.DimVar
    for name in ("Topology", "Mesh", "Split", "Partial", "Broadcast"):
        assert getattr(dsl, name) is getattr(tshard, name) is getattr(tilefoundry, name)
    assert dsl.DimVarRangePat is pattern.DimVarRangePat is tilefoundry.DimVarRangePat
    assert dsl.Pattern is pattern.Pattern
    assert dsl.func is tilefoundry.func
    assert callable(tilefoundry.module) and tilefoundry.module.__name__ == "module"
    assert "module" not in dsl.__all__


def test_1_1_ir_core_module_paths():
    from tilefoundry.ir.core.module import Module, function_selectors, select
    from tilefoundry.ir import module as irmodule

    assert Module is irmodule.Module and select is irmodule.select
    assert function_selectors is irmodule.function_selectors


def test_1_1_storage_names_are_the_six_members():
    import tilefoundry.dsl.storage as storage
    from tilefoundry.ir.storage import StorageKind

    assert [getattr(storage, n) for n in storage.__all__] == list(StorageKind)
    assert storage.smem is StorageKind.SMEM


def test_1_1_T_namespace_exists():
    import tilefoundry.dsl as dsl

    assert dsl.T.__name__ == "tilefoundry.dsl.T"
    with pytest.raises(AttributeError):
        dsl.T.evaluate


@needs_ops
def test_1_2_tf_resolves_on_demand_from_registry():
    from tilefoundry.dsl import tf
    from tilefoundry.dsl.tf import TfOp
    from tilefoundry.semantics.op_registry import TF_NAMES, TfName

    assert tf.__all__ == sorted(TF_NAMES)
    assert isinstance(tf.matmul, TfOp) and tf.matmul.op_class is TF_NAMES["matmul"].op_class
    assert tf.add.fixed  # an alias pins its kind
    with pytest.raises(AttributeError):
        tf.frobnicate
    TF_NAMES["zz_probe"] = TfName("zz_probe", TF_NAMES["matmul"].op_class)
    try:
        assert "zz_probe" in tf.__all__ and tf.zz_probe.name == "zz_probe"
    finally:
        del TF_NAMES["zz_probe"]
    assert "zz_probe" not in tf.__all__


@needs_ops
def test_1_3_the_72_tf_names():
    from tilefoundry.dsl import tf

    names = """abs add arange argmax binary cache_update cast ceil clamp cmp_eq cmp_ge cmp_gt
    cmp_le cmp_lt cmp_ne concat conv2d div exp exp2 floor_div full_like gelu index_add
    index_copy index_select insert_slice layer_norm local log log2 logical_and
    logical_not logical_or matmul max maximum min minimum mma_sm80_16x8x16 mod mul neg
    quant rank reduce relu repeat_interleave reshape reshard rms_norm rope round rsqrt
    shape_of sigmoid silu slice softmax softplus split square stack sub tanh topk
    transpose tuple_get_item unary wgmma_sm90_64x128x16 where zeros""".split()
    assert len(names) == 72
    missing = [n for n in names if n not in tf.__all__]
    assert not missing


def test_1_1_import_tilefoundry_is_light_and_fast():
    code = (
        "import sys, time; t = time.perf_counter(); import tilefoundry; dt = time.perf_counter() - t; "
        "heavy = [m for m in ('islpy', 'ortools', 'numpy') if m in sys.modules]; "
        "print(dt, heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    elapsed, heavy = out.split(" ", 1)
    assert float(elapsed) < 0.3
    assert heavy.strip() == "[]"


def test_1_1_lazy_names_resolve():
    import tilefoundry

    assert tilefoundry.VerifyError.__name__ == "VerifyError"
    assert tilefoundry.DType.from_name("bf16").name == "bf16"
    with pytest.raises(AttributeError):
        tilefoundry.no_such_name


def test_3_1_tensor_subscript_at_run_time():
    from tilefoundry.dsl import ConstTensor, DimVar, Tensor
    from tilefoundry.errors import VerifyError
    from tilefoundry.ir.storage import StorageKind
    from tilefoundry.ir.tensor_type import TensorType

    n = DimVar("n", 1, 9)
    t = Tensor[(n, 4), "bf16"]
    assert isinstance(t, TensorType) and t.shape == (n, 4) and t.dtype.name == "bf16"
    assert ConstTensor[(2,), "f32", "smem"].storage is StorageKind.SMEM
    assert Tensor[(), "i32"].shape == ()
    with pytest.raises(VerifyError, match="unknown value 'f8e4m3'"):
        Tensor[(4,), "f8e4m3"]
