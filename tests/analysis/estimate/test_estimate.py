"""The estimate family (issue 37, docs/estimate.md): the summary line, the
physics it must obey, every effect switchable, every constant sourced."""
from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.estimate import (EFFECTS, EstimateOptions, EstimateSummaryMetadata,
                                          estimate_facts)
from tilefoundry.analysis.roofline import RooflineMetadata
from tilefoundry.api import load
from tilefoundry.errors import AnalysisError, ArgumentError

sys.path.insert(0, str(Path(__file__).parent))
import programs  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
GOLDEN = REPO / "tests" / "data" / "programs"
GPUS = ("nvidia.h100_sxm", "nvidia.h200_sxm", "nvidia.b200_sxm")
# golden programs that need no --dim and whose module is the file's only one
PLAIN = ("p01_rownorm_mesh.py", "p02_dense_bias_gelu.py", "p03_tiled_gemm.py",
         "p04_split_k_partial.py", "p07_multi_result.py", "p09_predicates_special.py",
         "p13_b200_residual_layernorm.py", "p24_where_condition_storage.py")


def _estimate(selection, target=None, options=None, families=("estimate",), dims=None):
    from tilefoundry.api import retarget

    module, function = load(selection)
    if target is not None:
        module = retarget(module, target)
    result = analyze(module, function, analysis=families, dims=dims,
                     options={"estimate": options} if options is not None else None)
    return result.function


def _ns(selection, **kwargs) -> int:
    return _estimate(selection, **kwargs).get_metadata(EstimateSummaryMetadata).predicted_ns


# ---------------------------------------------------------------- 1: the family


def test_issue37_1_summary_line_names_time_and_bound():
    out = subprocess.run([sys.executable, "-m", "tilefoundry", "analyze", "--estimate",
                          str(GOLDEN / "p03_tiled_gemm.py")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    line = next(l for l in out.stdout.splitlines() if l.startswith("# estimate predicted-ns="))
    assert re.fullmatch(r"# estimate predicted-ns=[1-9]\d* bound-by=(hbm|l2|smem|tensor|"
                        r"cuda-core|special|latency|launch|fabric) launch=graph kernels=1", line)
    kernel = next(l for l in out.stdout.splitlines() if l.startswith("# estimate kernel=0"))
    assert "p03_tiled_gemm.py:32:9" in kernel and "ctas=16" in kernel


@pytest.mark.parametrize("target", GPUS)
@pytest.mark.parametrize("name", PLAIN)
def test_issue37_1_answers_every_plain_golden_program(name, target):
    function = _estimate(f"{GOLDEN / name}", target=target, families=("estimate", "roofline"))
    record = function.get_metadata(EstimateSummaryMetadata)
    assert record.kernels and record.predicted_ns == sum(k.ns for k in record.kernels)


def test_issue37_2_cpu_target_refuses_estimate():
    """The cpu target states no sustained GPU rates: the family refuses it by
    name (the program-level run is refused before, by memory)."""
    from tilefoundry.target.cpu import CpuTarget

    with pytest.raises(AnalysisError, match=r"^estimate: .*no Facts projection for 'EstimateFacts'"):
        estimate_facts(CpuTarget())
    with pytest.raises(AnalysisError):
        _estimate(f"{GOLDEN / 'p15_cpu_host_scale.py'}")


# ---------------------------------------------------------------- 6: the physics


def test_issue37_6_compute_bound_gemm_agrees_on_h100_and_h200(tmp_path):
    """Same tensor peak and clock: the same GEMM within 5% on both."""
    h100 = _ns(programs.gemm(tmp_path, 4096, 4096, 4096, tn=256, target="nvidia.h100_sxm"))
    h200 = _ns(programs.gemm(tmp_path, 4096, 4096, 4096, tn=256, target="nvidia.h200_sxm"))
    assert abs(h100 - h200) <= 0.05 * h100


def test_issue37_6_compute_bound_gemm_is_its_sustained_tensor_time(tmp_path):
    """2MNK flops at the sustained tensor rate, quantised to whole waves: the
    hand derivation from the H100 document's own facts, within 5%."""
    from tilefoundry.target import CudaTarget, EstimateFacts

    facts = CudaTarget("nvidia.h100_sxm").get_facts(EstimateFacts)
    m = n = k = 4096
    function = _estimate(programs.gemm(tmp_path, m, n, k, tn=256))
    record = function.get_metadata(EstimateSummaryMetadata)
    kernel = record.kernels[0]
    per_sm_rate = facts.tensor_for("bf16") * facts.tensor_efficiency_ppm / 1e6 / facts.sm_count
    cta_flops = 2 * m * n * k / kernel.ctas
    rounds = -(-kernel.ctas // (facts.sm_count * kernel.ctas_per_sm)) * kernel.ctas_per_sm
    expected_ns = cta_flops * rounds / per_sm_rate * 1e9
    assert record.bound_by == "tensor"
    assert abs(record.predicted_ns - expected_ns) <= 0.05 * expected_ns


def test_issue37_6_doubling_k_doubles_a_compute_bound_gemm(tmp_path):
    once = _ns(programs.gemm(tmp_path, 4096, 4096, 2048, tn=256))
    twice = _ns(programs.gemm(tmp_path, 4096, 4096, 4096, tn=256))
    assert 1.9 * once <= twice <= 2.1 * once


def test_issue37_6_memory_bound_kernel_scales_with_its_bytes(tmp_path):
    small = _estimate(programs.copy(tmp_path, 8192, 2048, 1024))
    large = _estimate(programs.copy(tmp_path, 16384, 2048, 2048))
    a = small.get_metadata(EstimateSummaryMetadata)
    b = large.get_metadata(EstimateSummaryMetadata)
    assert a.bound_by == b.bound_by == "hbm"
    assert 1.8 * a.predicted_ns <= b.predicted_ns <= 2.2 * a.predicted_ns


@pytest.mark.parametrize("name", PLAIN)
def test_issue37_6_higher_hbm_bandwidth_never_slows_a_program(name, monkeypatch):
    import tilefoundry.analysis.estimate as family

    before = _ns(f"{GOLDEN / name}", target="nvidia.h100_sxm")
    real = family.estimate_facts
    monkeypatch.setattr(family, "estimate_facts", lambda target: dataclasses.replace(
        real(target), hbm_bandwidth=2 * real(target).hbm_bandwidth))
    after = _ns(f"{GOLDEN / name}", target="nvidia.h100_sxm")
    assert after <= before


@pytest.mark.parametrize("target", GPUS)
@pytest.mark.parametrize("name", PLAIN)
def test_issue37_6_estimate_is_never_below_the_roofline_ideal(name, target):
    function = _estimate(f"{GOLDEN / name}", target=target, families=("estimate", "roofline"))
    ideal = function.get_metadata(RooflineMetadata).ideal_ns
    assert function.get_metadata(EstimateSummaryMetadata).predicted_ns >= ideal


def test_issue37_6_l2_reuse_reads_a_shared_panel_from_dram_once(tmp_path):
    """A 2048^3 GEMM fits the L2: DRAM moves A, B and C once, though the CTAs
    request each panel 16 times."""
    function = _estimate(programs.gemm(tmp_path, 2048, 2048, 2048))
    kernel = function.get_metadata(EstimateSummaryMetadata).kernels[0]
    once = 3 * 2048 * 2048 * 2
    assert kernel.dram_bytes == once
    assert kernel.l2_bytes >= 16 * 2 * 2048 * 2048 * 2


def _where_it_matters(effect: str, tmp_path) -> str:
    """A program whose time the effect changes: the tensor fraction a
    compute-bound GEMM, residency and latency a small row kernel's many-CTA
    copy, the cross-CTA term a split-K Partial, the rest a tiled GEMM."""
    if effect == "efficiency":
        return programs.gemm(tmp_path, 4096, 4096, 4096, tn=256)
    if effect in ("occupancy", "latency"):
        return programs.copy(tmp_path, 8192, 256, 1024)
    if effect == "cross-cta":
        return f"{GOLDEN / 'p04_split_k_partial.py'}"
    return programs.gemm(tmp_path, 4096, 4096, 4096)


@pytest.mark.parametrize("effect", EFFECTS)
def test_issue37_6_each_effect_can_be_switched_off(effect, tmp_path):
    selection = _where_it_matters(effect, tmp_path)
    on = _estimate(selection).get_metadata(EstimateSummaryMetadata)
    off = _estimate(selection, options=EstimateOptions(disabled={effect}))
    off = off.get_metadata(EstimateSummaryMetadata)
    assert effect in off.not_modelled and effect not in on.not_modelled
    assert off.predicted_ns != on.predicted_ns


def test_issue37_6_overlap_is_read_off_the_loop_dependences(tmp_path):
    """The GEMM's K loop loads windows that do not depend on the accumulator:
    overlapped; serialised it takes longer."""
    selection = programs.gemm(tmp_path, 2048, 2048, 2048)
    record = _estimate(selection).get_metadata(EstimateSummaryMetadata)
    serial = _estimate(selection, options=EstimateOptions(disabled={"overlap"}))
    assert record.kernels[0].overlapped
    assert serial.get_metadata(EstimateSummaryMetadata).predicted_ns > record.predicted_ns


def test_issue37_1_a_loop_recurrence_runs_its_units_in_turn(tmp_path):
    """Overlap: a trip whose product reads what the last trip carried (the
    product, then its exponential, feed the next trip's product) cannot start
    before the last one ends, so with one CTA per SM its tensor and special
    work add up; the same work on values the loop does not carry overlaps
    across trips, bounded by the busiest unit."""
    timed = {}
    for recurrent in (True, False):
        record = _estimate(programs.chain(tmp_path, recurrent)).get_metadata(EstimateSummaryMetadata)
        kernel = record.kernels[0]
        assert kernel.ctas_per_sm == 1, "the test needs one CTA per SM"
        effects = dict(kernel.effects)
        timed[recurrent] = (record.predicted_ns, effects["tensor"], effects["special"])
    chained, tensor, special = timed[True]
    assert chained >= tensor + special
    overlapped, tensor, special = timed[False]
    assert max(tensor, special) <= overlapped < tensor + special


def test_issue37_1_a_mesh_block_is_one_launch_whatever_the_dataflow_order(tmp_path):
    """Launches: a top-level Mesh scope is one launch. The second block's
    weight load reads nothing of the first block, so the dataflow order may
    visit it first; it is still the second block's statement, and the
    program is two launches priced alike in either operand order."""
    priced = []
    for weight_first in (True, False):
        record = _estimate(programs.two_blocks(tmp_path, weight_first)).get_metadata(EstimateSummaryMetadata)
        assert len(record.kernels) == 2
        assert [k.ctas for k in record.kernels] == [128, 128]
        priced.append(record.predicted_ns)
    assert priced[0] == pytest.approx(priced[1], rel=0.01)


def test_issue37_1_a_split_value_gathered_in_its_own_launch_waits_a_grid_barrier(tmp_path):
    """Cross-CTA work: a value the launch wrote split over its CTAs, read back
    whole by each, can be read only once every CTA has written: a grid-wide
    wait (a kernel boundary's gap and a DRAM round trip), never free. The
    same read of a parameter waits for nothing."""
    facts = estimate_facts(load(programs.gather(tmp_path, True)).module.resolve_target())
    wait = facts.graph_gap_ns + facts.dram_latency_ns
    effects = {}
    for own, level in ((True, "gmem"), (True, "smem"), (False, "gmem")):
        kernel = _estimate(programs.gather(tmp_path, own, level)).get_metadata(EstimateSummaryMetadata).kernels[0]
        effects[own, level] = dict(kernel.effects).get("cross-cta", 0)
    assert effects[True, "gmem"] >= wait
    assert effects[True, "smem"] >= wait  # staged in smem, it still crosses CTAs
    assert effects[False, "gmem"] == 0


def test_issue37_1_a_reduce_over_an_axis_split_over_ctas_crosses_them(tmp_path):
    """Cross-CTA work: a reduce over columns split over the CTAs is complete
    (each CTA holds the whole sum), so every CTA's partial crosses to the
    others after a grid barrier, whether the split was staged in smem or gmem."""
    facts = estimate_facts(load(programs.reduce_across(tmp_path, "smem")).module.resolve_target())
    priced = {}
    for level in ("smem", "gmem"):
        kernel = _estimate(programs.reduce_across(tmp_path, level)).get_metadata(EstimateSummaryMetadata).kernels[0]
        assert dict(kernel.effects).get("cross-cta", 0) >= facts.graph_gap_ns + facts.dram_latency_ns
        priced[level] = kernel.ns
    assert priced["smem"] == pytest.approx(priced["gmem"], rel=0.05)


def test_issue37_1_a_loop_writing_its_carried_gmem_output_still_overlaps(tmp_path):
    """Overlap is read off the loop's dependences: its loads are the
    statements that read gmem. A trip's row read does not depend on what the
    loop carries, so the loop prefetches whether its output is held in
    registers or written into gmem slice by slice (an insert_slice writes, it
    is no load)."""
    for storage in ("rmem", "gmem"):
        kernel = _estimate(programs.scan(tmp_path, storage)).get_metadata(EstimateSummaryMetadata).kernels[0]
        assert kernel.overlapped, storage


def test_issue37_1_a_view_placed_in_another_blocks_run_splits_no_launch(tmp_path):
    """Launches: the dataflow order may place the tuple field of a loop's second
    result (a view, which launches nothing) after the next block's first
    statements; the first block's write of that result is still its own
    launch's statement: two blocks, two launches."""
    record = _estimate(programs.two_sums(tmp_path)).get_metadata(EstimateSummaryMetadata)
    assert len(record.kernels) == 2


def test_issue37_1_a_slice_opened_inside_the_whole_level_runs_on_the_slice(tmp_path):
    """Occupancy and waves: the CTAs that work are the slice's 16, whether the
    slice is opened inside a mesh of the whole level or alone; the launch's
    other CTAs have nothing to do and lend it no bandwidth."""
    kernels = [_estimate(programs.sliced(tmp_path, nested)).get_metadata(EstimateSummaryMetadata).kernels[0]
               for nested in (True, False)]
    assert [k.ctas for k in kernels] == [16, 16]
    assert kernels[0].ns == kernels[1].ns


def test_issue37_1_reads_in_flight_bound_a_memory_bound_kernel(tmp_path):
    """Memory hierarchy, Little's law: a kernel whose CTAs keep few bytes in
    flight waits a DRAM round trip per window of reads (the M/M/1 loaded
    latency), so the same bytes in smaller trips take longer; each of the 132
    CTAs prefetches one trip ahead (two trips in flight)."""
    rows, cols, ctas = 1024, 1024, 132
    facts = estimate_facts(load(programs.stream(tmp_path, rows, cols, ctas, 1)).module.resolve_target())
    timed = []
    for step in (64, 8, 1):
        record = _estimate(programs.stream(tmp_path, rows, cols, ctas, step))
        kernel = record.get_metadata(EstimateSummaryMetadata).kernels[0]
        reads = ctas * rows * cols * 4
        rounds = reads / (2 * step * cols * 4 * ctas)
        waited = dict(kernel.effects)["latency"] - facts.dram_latency_ns  # the first load's wait
        assert waited == pytest.approx(rounds * facts.dram_latency_ns, rel=0.01, abs=2)
        timed.append(kernel.ns)
    assert timed[0] < timed[1] < timed[2]


def test_issue37_1_occupancy_counts_the_threads_of_a_nested_thread_mesh():
    """Occupancy: p01's CTAs run a 4 x 32 thread mesh nested in the CTA mesh, so an
    SM holds at most max_threads_per_sm / 128 of them (its tiny register and
    shared-memory footprints do not bind first)."""
    selection = f"{GOLDEN / 'p01_rownorm_mesh.py'}"
    facts = estimate_facts(load(selection).module.resolve_target())
    kernel = _estimate(selection).get_metadata(EstimateSummaryMetadata).kernels[0]
    assert kernel.ctas_per_sm == min(facts.max_threads_per_sm // 128, facts.max_ctas_per_sm)


def test_issue37_1_occupancy_counts_the_threads_a_module_declares(tmp_path):
    """Occupancy: a module declaring Topology("thread", 512) runs 512-thread CTAs
    even where no thread mesh splits its values (FlashInfer's RMSNorm), so an SM
    holds max_threads_per_sm / 512 of them; without the declaration the
    footprints and the resident-CTA ceiling decide."""
    declared = programs.copy(tmp_path, 4096, 1024, 4096, threads=512)
    facts = estimate_facts(load(declared).module.resolve_target())
    kernel = _estimate(declared).get_metadata(EstimateSummaryMetadata).kernels[0]
    assert kernel.ctas_per_sm == facts.max_threads_per_sm // 512
    plain = _estimate(programs.copy(tmp_path, 4096, 1024, 4096))
    assert plain.get_metadata(EstimateSummaryMetadata).kernels[0].ctas_per_sm > kernel.ctas_per_sm


def test_issue37_1_stream_launch_waits_for_the_host(tmp_path):
    selection = f"{GOLDEN / 'p01_rownorm_mesh.py'}"
    stream = _estimate(selection, options=EstimateOptions(launch="stream"))
    facts = estimate_facts(load(selection).module.resolve_target())
    record = stream.get_metadata(EstimateSummaryMetadata)
    assert record.launch == "stream" and record.predicted_ns >= facts.stream_interval_ns


def test_issue37_1_options_are_checked():
    with pytest.raises(ArgumentError, match="no effect named 'cache'"):
        EstimateOptions(disabled={"cache"})
    with pytest.raises(ArgumentError, match="launch takes one of graph, stream"):
        EstimateOptions(launch="eager")


# ---------------------------------------------------------------- 2: sources


def test_issue37_2_every_fact_the_estimate_reads_has_a_source():
    """Walk the GPU documents: every ``estimate.*`` fact, and every fact the
    projection reads, states its origin, source and conditions (a derived one
    its derivation); an unavailable one says why."""
    from tilefoundry.target import CudaTarget

    read = ("compute.sm_count", "memory.hbm.bandwidth", "memory.l2.capacity",
            "service.special", "service.integer", "compute.effective_clock")
    for device in GPUS:
        target = CudaTarget(device)
        for doc in (target.device_document, target.architecture_document):
            for fact in doc.sorted_facts():
                if not (fact.path.startswith("estimate.") or fact.path in read
                        or fact.path.startswith("throughput.")):
                    continue
                if fact.value is None:
                    assert fact.conditions.strip(), fact.path
                    continue
                assert fact.source and fact.source.strip(), (device, fact.path)
                assert fact.origin and fact.conditions.strip(), (device, fact.path)
                if fact.origin == "derived":
                    assert fact.derivation, (device, fact.path)
        assert any(f.path.startswith("estimate.") for f in target.device_document.sorted_facts())


# ---------------------------------------------------------------- 5: views


def test_issue37_5_rows_and_sweep_tables_show_the_estimate_beside_performance():
    out = subprocess.run([sys.executable, "-m", "tilefoundry", "analyze", "--estimate",
                          "--performance", "--dim", "seq=96,128",
                          f"{GOLDEN / 'p11_seq_variants.py'}:SeqPool"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    header, first, second = out.stdout.splitlines()[:3]
    assert header.split()[-4:] == ["predicted-ns", "waves", "estimate-ns", "estimate-bound-by"]
    assert int(first.split()[-2]) < int(second.split()[-2])  # more rows, more time
    from tilefoundry.api import figures
    from tilefoundry.sweep.table import figure_cells

    cells = figure_cells(figures(f"{GOLDEN / 'p11_seq_variants.py'}:SeqPool", dims={"seq": 96},
                                 families=("estimate", "performance")))
    assert cells["estimate-ns"] == int(first.split()[-2])
    assert cells["estimate-bound-by"] == first.split()[-1]


def test_issue37_5_top_and_breakdown_add_up_to_the_estimate():
    """Statement shares times their runs add up to the kernels' bodies: never
    past the estimate, and within its launch and latency gaps of it."""
    out = subprocess.run([sys.executable, "-m", "tilefoundry", "analyze", "--top", "1000", "--json",
                          str(GOLDEN / "p03_tiled_gemm.py")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    import json

    document = json.loads(out.stdout)
    total = document["totals"]["estimate"]
    summed = sum(row["estimate_ns"] for row in document["statements"])
    record = _estimate(f"{GOLDEN / 'p03_tiled_gemm.py'}").get_metadata(EstimateSummaryMetadata)
    gaps = sum(ns for k in record.kernels for name, ns in k.effects if name in ("launch", "latency"))
    assert total - gaps - len(document["statements"]) <= summed <= total


def test_issue37_5_html_breaks_each_kernel_down_by_effect(tmp_path):
    page = tmp_path / "p03.html"
    trace = tmp_path / "p03.trace.json"
    out = subprocess.run([sys.executable, "-m", "tilefoundry", "analyze", "--html", str(page),
                          "--trace", str(trace), str(GOLDEN / "p03_tiled_gemm.py")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    html = page.read_text()
    assert "<h2>Estimate by kernel</h2>" in html and "<th>cuda-core</th>" in html
    import json

    events = json.loads(trace.read_text())["traceEvents"]
    kernels = [e for e in events if e["ph"] == "X" and e["name"].startswith("kernel ")]
    assert len(kernels) == 1 and kernels[0]["args"]["ctas"] == 16


# ---------------------------------------------------------------- the zoo


def _placed_layers():
    """One placed decoder layer of every zoo model (its first placed root's)."""
    from tilefoundry.models import MODELS

    found = []
    for model in MODELS:
        root = model.placed_roots[0].root
        layer = next((s for s in model.selections
                      if s.selector.split(".")[0] == root and s.kind == "layer"), None)
        if layer is not None:
            found.append((model, layer))
    return found


@pytest.mark.parametrize("target", GPUS)
def test_issue37_done_when_the_zoo_answers_on_every_gpu(target):
    """A placed layer of every model, on each GPU: an estimate, its kernels
    adding up, never below the roofline (bench: every selection, 852 runs)."""
    for model, layer in _placed_layers():
        function = _estimate(f"{model.source}:{layer.selector}", target=target,
                             families=("estimate", "roofline"), dims=dict(layer.dims) or None)
        record = function.get_metadata(EstimateSummaryMetadata)
        assert record.predicted_ns == sum(k.ns for k in record.kernels) > 0, layer.selector
        assert record.predicted_ns >= function.get_metadata(RooflineMetadata).ideal_ns


ZERO_TRIPS = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="f", target=CudaTarget("nvidia.h100_sxm"), topologies=(Topology("cta", 4),))
class Zero:
    @func
    def f(x: Tensor[(256, 64), "f32"]) -> Tensor[(256, 64), "f32"]:
        with Mesh(("cta",), (4,), ("r",)) as grid:
            acc = tf.zeros(Tensor[(256 @ grid.r, 64), "f32", "rmem"])
            for k in range({start}, {stop}):
                acc = acc + tf.reshard(x, (256 @ grid.r, 64), "rmem")
            return tf.reshard(acc, (256 @ grid.r, 64), "gmem")
'''


def test_issue37_1_a_loop_of_no_trips_costs_nothing(tmp_path):
    """range(5, 0) runs no trip (analysis spec: 0 <= t < trips): the kernel
    is what it is without the loop."""
    none = tmp_path / "none.py"
    none.write_text(ZERO_TRIPS.format(start=5, stop=0))
    one = tmp_path / "one.py"
    one.write_text(ZERO_TRIPS.format(start=0, stop=1))
    empty = _estimate(f"{none}:Zero").get_metadata(EstimateSummaryMetadata).kernels[0]
    single = _estimate(f"{one}:Zero").get_metadata(EstimateSummaryMetadata).kernels[0]
    assert empty.ns < single.ns
    assert dict(empty.effects).get("latency", 0) <= dict(single.effects)["latency"]


def test_issue37_8_the_structure_memo_answers_as_a_fresh_derivation(monkeypatch):
    """Kernels and statements of one structure are priced once; with the
    memo switched off every record is the same."""
    from tilefoundry.analysis.estimate import kernels as kernel_module
    from tilefoundry.analysis.estimate.timings import EstimateMetadata
    from tilefoundry.models import MODELS

    llama = MODELS[0]
    selection = f"{llama.source}:{llama.placed_roots[0].root}.layer0"

    def records(function):
        from tilefoundry.analysis.check import iter_nodes
        from tilefoundry.ir.expr import Call

        calls = [n.get_metadata(EstimateMetadata) for n in iter_nodes(function.body)
                 if isinstance(n, Call)]
        return function.get_metadata(EstimateSummaryMetadata), calls

    memoised = records(_estimate(selection, dims={"ctx_len": 1024}))
    monkeypatch.setattr(kernel_module.Kernel, "structure", property(lambda self: None))
    monkeypatch.setattr(kernel_module, "_statement",
                        lambda call, mesh, axes, ctas, facts, level, memo:
                        kernel_module._read_statement(call, mesh, axes, ctas, facts, level))
    fresh = records(_estimate(selection, dims={"ctx_len": 1024}))
    assert memoised == fresh


def test_issue37_1_kernels_of_one_kind_share_a_summary_line():
    """A whole model's layers launch the same kernels: the text names each
    kind once with its count (JSON keeps every kernel), and the counts cover
    every launch."""
    from tilefoundry.models import MODELS

    llama = MODELS[0]
    root = llama.placed_roots[0].root
    out = subprocess.run([sys.executable, "-m", "tilefoundry", "analyze", "--estimate",
                          "--summary", "--dim", "ctx_len=1024", f"{llama.source}:{root}.decode_step"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = [l for l in out.stdout.splitlines() if l.startswith("# estimate kernel=")]
    total = int(re.search(r"kernels=(\d+)", out.stdout).group(1))
    counts = [int(m.group(1)) if (m := re.search(r" x(\d+) ", l)) else 1 for l in lines]
    assert sum(counts) == total and len(lines) < total / 8
