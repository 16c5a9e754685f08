"""Robustness: nine programs in the style of published model files
(tests/dsl/programs/) go through the loader (authoring.md §2.10), the CLI typed
path (companions §8.1) and `analyze --compute-cost` in a subprocess, and the
printed program is a parse -> print -> parse fixed point. Every compute-cost
figure below was computed by hand from companions §5.3 (see each comment)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dsl.dsl_helpers import calls, needs_ops

pytestmark = needs_ops

HERE = Path(__file__).resolve().parent / "programs"
REPO = Path(__file__).resolve().parents[2]

# (source, dims, compute-cost summary line: whole@per-unit)
CASES = {
    # matmuls 2*16*256*(256+128+128+256) + 3 * 2*16*256*512 = 18874368; cast->bf16 4096,
    # residual adds 2*4096, silu 8192, gate mul 8192 (bf16). f32: rms_norm 2 * 8*4096,
    # casts 4096+2048+2048, rope 3*(4096+2048), scores/ctx matmuls 2 * 2*4*16*64*16,
    # scale mul 1024, softmax 1024.
    "llama": ("a01_llama_factory.py:Llama", {"seq": 16},
              "flops=bf16:18903040@18903040,f32:356352@356352"),
    # bf16: router 2*32*128*8, expert 2 * 2*32*128*256, relu 8192, out cast 4096.
    # f32: cast 256, softmax 256, topk 256, reduce 64, div 64, cast 4096, index_add 4096,
    # cast 32, mul 4096.
    "moe": ("a02_moe_router.py", None, "flops=bf16:4272128@4272128,f32:13216@13216"),
    # bf16: matmul 2*8*64*64 + silu 512 + add 512; f32: rms_norm 8*512.
    "tree": ("a03_module_tree.py:Stack.layer1", None, "flops=bf16:66560@66560,f32:4096@4096"),
    "decode": ("a04_variants_converter.py", {"seq": 1}, "flops=bf16:8192@8192"),
    # f32: casts 6400 + 4096, matmul 2*100*64*64; bf16: cast back 6400.
    "prefill": ("a04_variants_converter.py", {"seq": 100}, "flops=bf16:6400@6400,f32:829696@829696"),
    # matmul 2*4*1*64*64 + reduce 256; integer: two coordinate muls and their add.
    "kv": ("a05_kv_mesh_coords.py:KvStep", None, "flops=bf16:33024@33024 service=integer:3@3"),
    # 16 row trips x 4 windows x 32 adds; 16 x (reduce 32 + add 1); x+1, mul, x*2 on 2048;
    # exp 2048 is special.
    "loops": ("a06_loops_index.py:Loops", None, "flops=f32:8720@8720 service=special:2048@2048"),
    # ctx=256: 4 blocks x 2 halves; matmul 2*4*16*32*64 each; f32 cast 4096 + reduce 4096
    # + max 64 each; heads split over 4 CTAs -> per unit / 4.
    "prefill_tiles": ("a07_tiled_prefill.py", {"ctx": 256}, "flops=bf16:2097152@524288,f32:66048@16512"),
    # rows split over the 4 CTAs of GRID[:4]: bf16 3*4096 + 16, f32 cast/square/reduce
    # 3*4096 + mul/add 2*16, rsqrt 16 special; per unit a quarter.
    "sliced": ("a08_standalone_sliced.py", None,
               "flops=bf16:12304@3076,f32:12320@3080 service=special:16@4"),
    # reduce max 4096 + max 8 + sub 4096 + reduce sum 4096 + sub 4096; exp 4096 + log 8 special.
    "star_tf": ("a09_star_tf_cpu.py:Root", None, "flops=f32:16392@16392 service=special:4104@4104"),
}


def _load(source: str):
    from tilefoundry.dsl.loader import load_selection

    return load_selection(str(HERE / source))


def _typed(source: str, dims) -> str:
    from tilefoundry.cli.analyze_cmd import typed_program

    module, function = _load(source)
    return typed_program(module, function, dims)


@pytest.fixture(scope="module")
def typed():
    cache: dict = {}

    def get(key: str) -> str:
        if key not in cache:
            source, dims, _ = CASES[key]
            cache[key] = _typed(source, dims)
        return cache[key]

    return get


def _statement(text: str, pattern: str) -> str:
    found = [line.strip() for line in text.splitlines() if re.search(pattern, line)]
    assert len(found) == 1, (pattern, found)
    return found[0]


@pytest.mark.parametrize("key", list(CASES))
def test_authoring_programs_compute_cost_by_hand(key):
    source, dims, summary = CASES[key]
    argv = [sys.executable, "-m", "tilefoundry", "analyze", "--compute-cost"]
    for name, extent in (dims or {}).items():
        argv += ["--dim", f"{name}={extent}"]
    done = subprocess.run(argv + [str(HERE / source)], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.splitlines()[2] == f"# compute-cost {summary}", done.stdout[:400]


@pytest.mark.parametrize("key", list(CASES))
def test_authoring_programs_print_reparse_print_is_fixed_point(key, typed, tmp_path):
    """The printed program, Module included, analyses to itself."""
    from tests.golden.typed_text import reanalysed

    first = typed(key)
    assert reanalysed(first, tmp_path, f"printed_{key}") == first


# ---------------------------------------------------------------- per-program facts


def test_a01_factory_config_and_child_weights(typed):
    module, function = _load("a01_llama_factory.py:Llama")
    layer = module.child("layer")
    assert module.name == "Model" and [m.name for m in module.modules] == ["layer"]
    assert set(layer.methods) == {"forward"} and layer.entry == "decoder_layer"
    assert [p.name for p in function.params] == ["x", "cos", "sin", "pos"]
    assert function.params[1].type.shape == (2048, 64)  # config.max_position_embeddings, head_dim
    text = typed("llama")
    assert "    layer_wk: ConstTensor[(256, 128), \"bf16\"]," in text  # KV * HD from the config
    rope = _statement(text, r"= rope\(")
    assert rope.endswith('# Tuple[Tensor[(1, 16, 4, 64), "f32"], Tensor[(1, 16, 2, 64), "f32"]]')
    assert _statement(text, r"= 0\.125  #")  # 1.0 / HD ** 0.5 folded at authoring time
    assert "rms_norm(x, layer_ln1, eps=1e-05)" in text  # config.rms_norm_eps


def test_a02_moe_tuple_return_topk_and_index_add(typed):
    _, function = _load("a02_moe_router.py")
    text = typed("moe")
    topk = _statement(text, r"= topk\(")
    assert "k=2, axis=-1, largest=True, sorted=True" in topk
    assert topk.endswith('# Tuple[Tensor[(32, 2), "f32"], Tensor[(32, 2), "i64"]]')
    assert _statement(text, r"= index_add\(").endswith('# Tensor[(32, 128), "f32"]')
    assert _statement(text, r"= zeros\(").startswith("v0 = zeros(type=Tensor[(32, 128), \"f32\"])")
    assert function.result_type.shape == (32, 128) and function.result_type.dtype.name == "bf16"


def test_a03_module_tree_children_methods_and_selection(typed):
    from tilefoundry.dsl.loader import load_module_file

    stack = load_module_file(str(HERE / "a03_module_tree.py")).Stack
    assert [m.name for m in stack.modules] == ["layer0", "layer1", "layer2"]
    assert set(stack.methods) == {"forward", "init_caches"}
    assert all(m.child("Mlp") is not None for m in stack.modules)
    mlp, fn = _load("a03_module_tree.py:Stack.layer1.Mlp")
    assert fn.name == "mlp" and mlp.effective_topologies()[0].name == "cta"  # inherited
    text = typed("tree")
    assert "    Mlp_w: ConstTensor[(64, 64), \"bf16\"]" in text
    assert _statement(text, r"= silu\(").endswith('# Tensor[(8, 64), "bf16"]')


def test_a04_variants_dispatch_and_converter(typed):
    module, function = _load("a04_variants_converter.py")
    assert function.body is None and len(function.variants) == 2
    assert [(p.lo, p.hi) for p, _ in function.variants] == [(1, 2), (2, 257)]
    assert function.converters["w"].name == "proj.converter[w]"
    assert function.converters["w"].params[0].type.dtype.name == "f32"
    decode, prefill = typed("decode"), typed("prefill")
    assert "cast(" not in decode and _statement(decode, r"= matmul\(").endswith('# Tensor[(1, 64), "bf16"]')
    assert _statement(prefill, r"= matmul\(").endswith('# Tensor[(100, 64), "f32"]')


def test_a05_mesh_coordinates_start_a_runtime_window(typed):
    text = typed("kv")
    assert _statement(text, r"= cache_update\(").startswith("v0 = cache_update(k_cache, pos, one, k_new)")
    window = _statement(text, r"= slice\(")
    assert "sizes=(1, 64, 4, 64), strides=(1, 1, 1, 1)" in window
    coords = [line for line in text.splitlines() if "= reshape(" in line and "new_shape=())" in line]
    # companions §7.4: a plain Layout is not part of an annotation
    assert len(coords) == 2 and all('Tensor[(), "i64", "rmem"]' in c for c in coords)


def test_a06_loops_lists_index_vectors_and_where(typed):
    from tilefoundry.ir.core.constraints import WhereMetadata

    _, function = _load("a06_loops_index.py:Loops")
    total, out, y, x2 = function.body.fields
    assert [v.name for v in total.args[0].carried] == ["acc", "total"]  # nested-loop carries
    record = y.get_metadata(WhereMetadata)
    assert record.layout == (None, (128, "cta")) and str(record.storage) == "gmem"
    assert x2.args[1].value == 2.0  # xs[0] of the list binding
    text = typed("loops")
    assert _statement(text, r"for i in ").startswith("for i in range(2, 16, 2):")
    assert _statement(text, r"for c in ").startswith("for c in tile(128, 32):")
    assert _statement(text, r"= reshape\(i, ").endswith('# Tensor[(1,), "i64", "umat"]')
    assert re.search(r"= insert_slice\(out, v\d+, \(i, 0\)\)", text)


def test_a07_tile_loops_over_a_dimvar_bound(typed):
    text = typed("prefill_tiles")
    assert _statement(text, r"for blk in ").startswith("for blk in tile(256, 64):")
    assert _statement(text, r"for half in ").startswith("for half in tile(64, 32):")
    assert _statement(text, r"= max\(best, ").endswith('# Tensor[(4, 16, 1), "f32", (4 @ cta.h, 16, 1), "rmem"]')


def test_a08_standalone_func_module_sliced_mesh_and_where(typed):
    from tilefoundry.ir.core.constraints import WhereMetadata

    module, function = _load("a08_standalone_sliced.py")
    assert module.name == "route_rows" and module.entry == "route_rows"
    placed = [c for c in calls(function.body) if c.get_metadata(WhereMetadata) is not None]
    records = [c.get_metadata(WhereMetadata) for c in placed]
    assert [str(r.storage) for r in records] == ["smem", "None"]
    assert records[0].mesh.shape == (4,) and records[1].bindings == (("cta", "B"),)
    assert records[1].layout == (16, 256)  # `rows` bound to ROWS first
    assert "special" not in _statement(typed("sliced"), r"= unary\(v\d+, kind=\"rsqrt\"\)")


def test_a09_star_tf_cpu_target_and_forward(typed):
    from tilefoundry.target import CpuTarget

    module, _ = _load("a09_star_tf_cpu.py:Root")
    assert module.target == CpuTarget() and module.methods["forward"].__name__ == "run_forward"
    assert module.child("stats").entry is None
    text = typed("star_tf")
    assert _statement(text, r"= max\(").startswith("v1 = max(v0, v0_2)")
    assert _statement(text, r"= log\(").endswith('# Tensor[(8, 1), "f32"]')
