"""authoring.md §2.10, companions §8.2: loading a source and resolving a selector;
the compatibility suite (shared/programs) loads unchanged."""
from __future__ import annotations

import re

import pytest

from tilefoundry.errors import SelectionError, TileFoundryError, VerifyError
from tests.dsl.dsl_helpers import PROGRAMS, needs_ops
from tests.golden.golden_runs import reference_location, text_at

pytestmark = needs_ops

TWO = '''
@module(entry="f")
class A:
    @func
    def f(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        return x

@module(target=CudaTarget("nvidia.h200_sxm"))
class B:
    a = A.renamed("a")

    @func
    def g(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        return x

    @func
    def h(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        return x
'''


def load(source):
    from tilefoundry.dsl.loader import load_selection

    return load_selection(source)


def test_8_2_selects_root_child_and_function(program):
    p = program(TWO)
    module, fn = load(f"{p}:A")
    assert (module.name, fn.name) == ("A", "f") and module.target is None
    module, fn = load(f"{p}:B.a")
    assert module.name == "a" and fn.name == "f" and module.resolve_target() is not None
    module, fn = load(f"{p}:B.h")
    assert fn.name == "h" and module.resolve_target() is not None
    module, fn = load(f"{p}:B.a.f")
    assert fn.name == "f"


@pytest.mark.parametrize("selector, message", [
    ("", "an empty segment names nothing"),
    ("B..a", "an empty segment names nothing"),
    ("Nope", "selector 'Nope' is not defined by the source"),
    ("B.zz", "selector 'B.zz': Module 'B' has no child module 'zz'"),
    ("B", "Module 'B' declares no entry"),
])
def test_8_2_selection_errors(program, selector, message):
    p = program(TWO)
    with pytest.raises(SelectionError) as info:
        load(f"{p}:{selector}")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_8_2_multiple_modules_without_selector(program):
    p = program(TWO)
    with pytest.raises(SelectionError, match=r"source defines multiple Modules \(A, B\); add ':Module'"):
        load(str(p))


def test_8_2_single_module_without_selector(program):
    p = program(TWO.split("@module(target")[0])
    module, fn = load(str(p))
    assert module.name == "A" and fn.name == "f"


def test_8_2_no_module(program):
    p = program("X = 1\n")
    with pytest.raises(SelectionError, match="source defines no TileFoundry Module"):
        load(str(p))
    p = program('@func\ndef f(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:\n    return x\n')
    with pytest.raises(SelectionError, match="source defines no TileFoundry Module"):
        load(str(p))
    with pytest.raises(SelectionError, match="selector 'f' resolves to Function, expected a Module"):
        load(f"{p}:f")


def test_8_2_file_not_found(tmp_path):
    missing = tmp_path / "nope.py"
    with pytest.raises(TileFoundryError, match=f"source file not found: {missing}"):
        load(f"{missing}:M")


def test_8_2_raising_file_is_one_line(program):
    p = program(TWO + 'raise RuntimeError("boom\\nsecond line")\n')
    with pytest.raises(TileFoundryError) as info:
        load(str(p))
    line = len(p.lines)
    assert str(info.value) == f"{p}:{line}:1: RuntimeError: boom"
    # with a selector, an unrelated failing statement is set aside
    module, _ = load(f"{p}:A")
    assert module.name == "A"


def test_8_2_failure_binding_the_root_is_raised(program):
    p = program('import no_such_module_xyz\nA = no_such_module_xyz.thing\n')
    # the root's statement fails on a name whose own (set-aside) statement failed:
    # that earlier failure is the cause, so it is the one reported
    with pytest.raises(TileFoundryError, match=r":5:1: ModuleNotFoundError: No module named 'no_such_module_xyz'"):
        load(f"{p}:A")
    p = program('A = no_such_name_xyz.thing\n')
    with pytest.raises(TileFoundryError, match=r":5:5: NameError: name 'no_such_name_xyz' is not defined"):
        load(f"{p}:A")


LAZY = TWO.replace("class B:", "class _Late:") + '''
BUILT = []


def _build_b():
    BUILT.append("Late")
    return _Late


def _boom():
    raise RuntimeError("no root today")


def __getattr__(name):  # PEP 562: roots built when first asked for
    factories = {"Late": _build_b, "Never": _boom}
    if name not in factories:
        raise AttributeError(name)
    return factories[name]()


def __dir__():
    return ["A", "Late"]
'''


def test_8_2_root_provided_by_module_getattr(program):
    from tilefoundry.dsl.loader import _load_for_root, resolve_selector

    p = program(LAZY)
    namespace = _load_for_root(str(p), "A")
    assert namespace["BUILT"] == []  # selecting A never builds Late
    module, fn = load(f"{p}:Late.h")
    assert (module.name, fn.name) == ("_Late", "h")
    namespace = _load_for_root(str(p), "Late")
    assert namespace["BUILT"] == ["Late"] and resolve_selector(namespace, "Late.a").name == "a"
    resolve_selector(namespace, "Late.g")
    assert namespace["BUILT"] == ["Late"]  # built once, kept in the namespace


def test_8_2_module_getattr_failures_and_listings(program):
    p = program(LAZY)
    line = p.lines.index('    raise RuntimeError("no root today")') + 1
    with pytest.raises(TileFoundryError) as info:
        load(f"{p}:Never")
    # the hook's failure is the one line of any statement's, at the user's line
    assert str(info.value) == f"{p}:{line}:5: RuntimeError: no root today"
    with pytest.raises(SelectionError) as info:
        load(f"{p}:Nope")
    # the listing names the roots __dir__ declares and __getattr__ provides
    assert "it defines the Modules A, Late, _Late" in str(info.value)
    with pytest.raises(SelectionError, match=r"source defines multiple Modules \(A, _Late\)"):
        load(str(p))


def test_8_2_syntax_error_is_one_line(program):
    p = program("def broken(:\n    pass\n")
    with pytest.raises(TileFoundryError) as info:
        load(f"{p}:A")
    assert str(info.value).startswith(f"{p}:5:") and "SyntaxError" in str(info.value)


def test_8_2_stdout_suppressed_and_dir_on_path_while_loading(program, capsys, tmp_path):
    """§2.10: the file's directory is first on sys.path while it loads (a sibling
    import works), and sys.path is as it was afterwards: a program file named
    after a standard module must not shadow it for the rest of the process."""
    import sys

    (tmp_path / "sibling_helper_mod.py").write_text("WIDTH = 4\n")
    p = program('from sibling_helper_mod import WIDTH\nprint("noise")\n' + TWO)
    before = list(sys.path)
    load(f"{p}:A")
    assert capsys.readouterr().out == ""
    assert sys.path == before and str(tmp_path) not in sys.path


def test_8_2_load_module_file(program):
    from tilefoundry.dsl.loader import load_module_file

    p = program(TWO)
    namespace = load_module_file(str(p))
    assert namespace.A.name == "A"


def test_2_2_module_fields_and_frozen_replace(program):
    import dataclasses

    from tilefoundry.target import CpuTarget

    p = program(TWO)
    module, _ = load(f"{p}:A")
    assert module.functions[0].name == "f" and module.entry == "f" and module.topologies is None
    replaced = dataclasses.replace(module, target=CpuTarget())
    assert replaced.target == CpuTarget()


@pytest.mark.parametrize("body, exc, message", [
    ('@module(entry="f", target="nvidia.h200_sxm")\nclass M:\n    pass\n', TypeError, "not a string"),
    ('@module(topologies=[Topology("cta", 4)])\nclass M:\n    pass\n', TypeError, "must be a tuple"),
    ('@module(topologies=(Topology("cta", 4), Topology("cta", 2)))\nclass M:\n    pass\n', ValueError, "repeated"),
    ('@module\nclass M:\n    pass\n', TypeError, "collects nothing"),
    ('@module\nclass M:\n    WIDTH = 4\n', TypeError, "member 'WIDTH' is a int"),
    ('@module\nclass M:\n    def __call__(self):\n        pass\n', TypeError, "forward"),
    ('@module(entry="nope")\nclass M:\n    def forward(self):\n        pass\n', ValueError, "entry 'nope'"),
])
def test_2_1_decorator_refusals(program, body, exc, message):
    p = program(body)
    with pytest.raises(TileFoundryError) as info:
        load(f"{p}:M")
    assert exc.__name__ in str(info.value) and message in str(info.value)


def test_2_1_child_declaring_target_is_refused(program):
    p = program('''
@module(entry="f", target=CudaTarget("nvidia.b200_sxm"))
class Leaf:
    @func
    def f(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        return x

@module(entry="g", target=CudaTarget("nvidia.h200_sxm"))
class Root:
    leaf = Leaf

    @func
    def g(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        return x
''')
    with pytest.raises(VerifyError) as info:
        load(f"{p}:Root")
    message = str(info.value)
    assert "Module 'Root': child module 'leaf' declares its own target" in message
    assert message.startswith(f"{p.locate('leaf = Leaf')}: ")  # the statement attaching the child


@pytest.mark.parametrize("ranges, fragment", [
    ([(1, 64), (128, 1025)], "rows in [64, 128) is not covered"),
    ([(1, 100), (64, 1025)], "rows in [64, 100) is covered twice"),
    ([(1, 64), (64, 1000)], "rows in [1000, 1025) is not covered"),
])
def test_2_5_variants_must_partition_the_envelope(program, ranges, fragment):
    variants = "".join(f'''
    @act.specialize(DimVarRangePat("rows", {lo}, {hi}))
    def v{lo}(x: Tensor[(ROWS, 4), "f32"]) -> Tensor[(ROWS, 4), "f32"]:
        return x
''' for lo, hi in ranges)
    p = program('''
ROWS = DimVar("rows", 1, 1025)
@module(entry="act", target=CudaTarget("nvidia.h200_sxm"))
class M:
    @func
    def act(x: Tensor[(ROWS, 4), "f32"]) -> Tensor[(ROWS, 4), "f32"]:
        pass
''' + variants)
    with pytest.raises(VerifyError) as info:
        load(f"{p}:M")
    message = str(info.value)
    assert fragment in message and message.startswith(p.locate("def act"))


def test_2_5_specialize_takes_one_dimvarrangepat(program):
    p = program('''
ROWS = DimVar("rows", 1, 1025)
@module(entry="act", target=CudaTarget("nvidia.h200_sxm"))
class M:
    @func
    def act(x: Tensor[(ROWS, 4), "f32"]) -> Tensor[(ROWS, 4), "f32"]:
        pass

    @act.specialize(Pattern())
    def v(x: Tensor[(ROWS, 4), "f32"]) -> Tensor[(ROWS, 4), "f32"]:
        return x
''')
    with pytest.raises(TileFoundryError, match="TypeError: 'act'.specialize takes exactly one DimVarRangePat"):
        load(f"{p}:M")


# ---------------------------------------------------------------- the compatibility suite

GOLDEN = [
    ("p01_rownorm_mesh.py", "RowNormTiles"), ("p02_dense_bias_gelu.py", "DenseBiasGelu"),
    ("p03_tiled_gemm.py", "TiledGemm"), ("p04_split_k_partial.py", "SplitKGemm"),
    ("p05_gqa_decode_online.py", "GqaDecodeStep"), ("p06_module_tree.py", "MiniStack"),
    ("p06_module_tree.py", "MiniStack.blk1"), ("p07_multi_result.py", "RouterProjection"),
    ("p08_shape_ops.py", "CacheShuffle"), ("p09_predicates_special.py", "MaskedLogSoftmax"),
    ("p10_lowp_dtypes.py", "Fp8Linear"), ("p11_seq_variants.py", "SeqPool"),
    ("p12_smem_overflow.py", "StagedProduct"), ("p13_b200_residual_layernorm.py", "ResidualLayerNorm"),
    ("p14_amx_core_gemm.py", "AmxCoreGemm"), ("p15_cpu_host_scale.py", "HostScale"),
    ("p16_standalone_sliced_mesh.py", "two_branch"),
]


@pytest.fixture
def in_programs(monkeypatch):
    monkeypatch.chdir(PROGRAMS)


@pytest.mark.parametrize("path, selector", GOLDEN, ids=[f"{p[:3]}:{s}" for p, s in GOLDEN])
def test_golden_program_loads(in_programs, path, selector):
    module, function = load(f"{path}:{selector}")
    assert module.resolve_target() is not None
    assert function.name == module.entry


# invalid programs refused while loading (authoring time): stem -> (rule fragment,
# file:line:col as we print it: the file's own column, and the token there that
# the message names)
REFUSED_HERE = {
    "i01_binary_dtype_mismatch": ("dtype mismatch (bf16 vs f32)", "invalid/i01_binary_dtype_mismatch.py:19:16", "a + b"),
    "i02_partial_through_exp": ("Partial(sum)", "invalid/i02_partial_through_exp.py:30:31", "tf.exp(part)"),
    "i03_operands_on_different_meshes": ("references a different mesh",
                                         "invalid/i03_operands_on_different_meshes.py:30:20", "x_p + y_p"),
    "i04_unknown_dtype": ("DType: unknown value 'f8e4m3'", "invalid/i04_unknown_dtype.py:17:33", '"f8e4m3"'),
    "i05_matmul_inner_mismatch": ("contraction-dim mismatch", "invalid/i05_matmul_inner_mismatch.py:17:16", "a @ b"),
    "i08_mesh_axis_straddles_levels": ("do not land on the boundary of level 'cta'",
                                       "invalid/i08_mesh_axis_straddles_levels.py:23:14", 'Mesh(("cta", "thread")'),
    "i09_child_declares_target": ("child module 'leaf' declares its own target",
                                  "invalid/i09_child_declares_target.py:23:5", "leaf = ScaleLeaf"),
    "i10_forward_sibling_call": ("unknown Op name 'inner'", "invalid/i10_forward_sibling_call.py:17:16", "inner(x)"),
    "i11_augassign_in_loop": ("augmented assignment (+= etc.) not supported",
                              "invalid/i11_augassign_in_loop.py:21:13", "acc +="),
    "i12_variants_leave_gap": ("rows in [64, 128) is not covered", "invalid/i12_variants_leave_gap.py:18:5", "def act("),
    # authoring §2.10: the first statement that failed while the file loaded, not the
    # later "name is not defined" of a kernel that reads the constant it should bind
    "i13_setaside_constant": ("could not convert string to float: '1e-6f'",
                              "invalid/i13_setaside_constant.py:14:12", 'float(SETTINGS["norm_eps"])'),
}
# dims binding: refused by the analysis layer (analyze --dim), not while loading
LOADS_HERE = ("i06_dim_left_unbound", "i07_dim_out_of_range")
SELECTORS = {"i01": "MixedPrecisionAdd", "i02": "ExpOfPartial", "i03": "CrossMeshAdd", "i04": "WidenFp8",
             "i05": "BadGemm", "i06": "GeluRows", "i07": "WindowSum", "i08": "Straddle",
             "i09": "TargetClash", "i10": "ForwardCall", "i11": "AugAssignLoop", "i12": "GappedVariants",
             "i13": "Norms.layer.norm"}


@pytest.mark.parametrize("stem", sorted(REFUSED_HERE))
def test_invalid_program_refused_with_its_rule(in_programs, stem):
    """Each refusal names its rule and starts with our location; where the
    reference's .err names one too, it is ours in the reference's convention
    (golden_runs.reference_location: the column less the def's indentation)."""
    rule, where, _ = REFUSED_HERE[stem]
    with pytest.raises(TileFoundryError) as info:
        load(f"invalid/{stem}.py:{SELECTORS[stem[:3]]}")
    message = str(info.value)
    assert rule in message
    assert message.startswith(f"{where}: ") or message.endswith(f"\n  at {where}"), message
    expected = (PROGRAMS / "expected" / "invalid" / f"{stem}.err").read_text()
    theirs = re.findall(r"  at (\S+:\d+:\d+)", expected)
    assert theirs in ([], [reference_location(where)])


@pytest.mark.parametrize("stem", sorted(REFUSED_HERE))
def test_invalid_program_location_points_at_the_token_named(in_programs, stem):
    """The location is the file's own line and column of the token the message
    names, as an editor counts it (never the dedented function source)."""
    _, where, token = REFUSED_HERE[stem]
    with pytest.raises(TileFoundryError) as info:
        load(f"invalid/{stem}.py:{SELECTORS[stem[:3]]}")
    located = re.search(r"(invalid/\S+\.py:\d+:\d+)", str(info.value)).group(1)
    assert located == where
    assert text_at(located).startswith(token), (located, text_at(located))


def test_reference_location_shifts_only_inside_a_def():
    """The reference's column of a kernel in a class body is 4 less than the
    file's; a module-level statement's is the file's."""
    assert reference_location("invalid/i01_binary_dtype_mismatch.py:19:16") == \
        "invalid/i01_binary_dtype_mismatch.py:19:12"
    assert reference_location("invalid/i13_setaside_constant.py:14:12") == \
        "invalid/i13_setaside_constant.py:14:12"


@pytest.mark.parametrize("stem", LOADS_HERE)
def test_invalid_dims_programs_load_for_the_analysis_layer(in_programs, stem):
    module, function = load(f"invalid/{stem}.py:{SELECTORS[stem[:3]]}")
    assert function.dimvars()


def test_every_invalid_program_is_classified():
    stems = sorted(path.stem for path in (PROGRAMS / "invalid").glob("i*.py"))
    assert stems == sorted(list(REFUSED_HERE) + list(LOADS_HERE))
