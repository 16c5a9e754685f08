"""Issue 42 item 1-2 on the command line: `tilefoundry place SOURCE [--target T]
[--level cta] [--time-limit S] [--top N] [--output FILE.py] [--json]`."""
import json
import re
from pathlib import Path

from tilefoundry import api
from tilefoundry.cli.main import main
from tests.place.conftest import kernel_source

DATA = Path(__file__).parent / "data"
RMS = f"{DATA / 'rows_small.py'}:SmallRms.rms"


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_place_prints_the_best_n_and_the_program_and_writes_it(capsys, tmp_path):
    out_file = tmp_path / "rms_placed.py"
    code, out, err = _run(capsys, "place", RMS, "--top", "2", "--time-limit", "30",
                          "--output", str(out_file))
    assert (code, err) == (0, "")
    ranks = [line for line in out.splitlines() if line.startswith(("# 1. ", "# 2. "))]
    assert len(ranks) == 2 and all("estimate_ns" in r and "peak" in r for r in ranks)
    assert "proven best within the space" in out.splitlines()[-1]
    # the program printed is the program written, and it loads
    assert out_file.read_text(encoding="utf-8") in out
    module, function = api.load(str(out_file))
    assert function.name == "rms"


def test_place_json_lists_the_placements_with_their_figures(capsys):
    code, out, err = _run(capsys, "place", RMS, "--json", "--top", "3", "--time-limit", "30")
    assert code == 0, err
    document = json.loads(out)
    assert document["kind"] == "place" and document["kernel_kind"] == "rows" and document["proven"] is True
    assert [p["rank"] for p in document["placements"]] == [1, 2, 3]
    figures = document["placements"][0]["figures"]
    assert set(figures) >= {document["objective"], "predicted_ns", "ideal_ns", "peak_bytes"}


def test_place_refusals_are_one_line(capsys):
    code, out, err = _run(capsys, "place", "tests/data/programs/p01_rownorm_mesh.py")
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1
    assert "already reshards" in err
    code, _, err = _run(capsys, "place", RMS, "--time-limit", "0")
    assert code == 2 and "--time-limit" in err and len(err.strip().splitlines()) == 1


def test_a_seed_past_the_solvers_field_is_mapped_not_refused(tmp_path):
    """CP-SAT's seed is 31 bits: a larger whole number is mapped onto it, so
    --seed 2**64 answers (issue 41 item 5's place campaign)."""
    import subprocess
    import sys
    from pathlib import Path

    kernel = Path(__file__).parent / "data" / "gemv_small.py"
    out = subprocess.run([sys.executable, "-m", "tilefoundry", "place", "--seed", str(2 ** 64),
                          "--time-limit", "5", str(kernel)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "# place gemv" in out.stdout and "estimate_ns" in out.stdout


def test_place_json_of_a_sequence_meets_its_schema_and_claims_no_proof(capsys):
    """A tuple result with RoPE is a sequence (kernel_kind "sequence"): its JSON is
    the schema's, and the summary says every point was priced without a proof."""
    selection = f"{DATA / 'sequence_small.py'}:SmallLayer.qkv_rope"
    code, out, err = _run(capsys, "place", selection, "--json", "--time-limit", "60")
    assert code == 0, err
    document = json.loads(out)
    assert document["kernel_kind"] == "sequence" and document["proven"] is False
    assert document["checked_at"] == "full extents" and document["placements"][0]["checked"]
    code, out, err = _run(capsys, "place", selection, "--time-limit", "60")
    assert code == 0 and "every point priced, no proof" in out.splitlines()[-1]


def _prime(params: str, result: str, dtype: str, body: str) -> str:
    return kernel_source(f'({params}) -> Tensor[{result}, "{dtype}"]', body, target="nvidia.h100_sxm")


def test_an_empty_space_is_refused_with_its_extents_and_the_remedy(capsys, tmp_path):
    """Prime extents leave no split and no tile that divides them: the refusal
    names the function, the extents and the remedy (it said "within 10 s")."""
    source = tmp_path / "prime_mm.py"
    source.write_text(_prime(params='a: Tensor[(7, 1009), "bf16"], b: ConstTensor[(1009, 1013), "bf16"]',
                                    result="(7, 1013)", dtype="bf16", body="a @ b"), encoding="utf-8")
    code, out, err = _run(capsys, "place", str(source))
    assert code == 1 and out == "" and "Traceback" not in err
    assert f"{source}:9:5: place: no matmul placement of 'f'" in err
    assert "(M 7, K 1009, N 1013)" in err and "pad the extents" in err


def test_a_space_whose_every_point_is_refused_says_so_with_each_reason(capsys, tmp_path):
    source = tmp_path / "prime_rows.py"
    source.write_text(_prime(params='x: Tensor[(1009, 1013), "f32"]', result="(1009, 1013)",
                                    dtype="f32", body="tf.softmax(x, -1)"), encoding="utf-8")
    code, out, err = _run(capsys, "place", str(source))
    assert code == 1 and "Traceback" not in err
    assert f"{source}:9:5: place: every one of the" in err and "placements of 'f' was refused" in err
    assert "more than the" in err and "in a larger level (gmem)" in err  # each reason whole, remedy kept


def test_a_prompt_sized_chain_says_which_stage_overflows_smem(capsys, tmp_path):
    """A chain stage reads its whole left operand into smem: 256 prompt rows do not
    fit; the refusal names the stage, its bytes and the remedy (it blamed the
    extents' divisors, which are fine)."""
    source = tmp_path / "swiglu.py"
    source.write_text(_prime(
        params='x: Tensor[(256, 1024), "bf16"], wg: ConstTensor[(1024, 512), "bf16"], '
               'wd: ConstTensor[(512, 1024), "bf16"]',
        result="(256, 1024)", dtype="bf16", body="tf.silu(x @ wg) @ wd"), encoding="utf-8")
    code, out, err = _run(capsys, "place", str(source))
    assert code == 1 and "Traceback" not in err
    assert re.search(r"no chain placement of 'f': stage 1 \(256 x 1024 @ 1024 x 512\) holds its whole left "
                     r"operand and inputs in smem: \d+ B .* more than the 232448 B", err)
    assert "place a prompt's matmuls one by one" in err and "pad the extents" not in err


def test_a_hostile_extent_is_refused_in_one_line_not_walked(capsys, tmp_path):
    """An extent of 10^11 rows: the space's divisors are found in O(sqrt n) (every
    integer below it was walked: the command hung), and the empty space refused."""
    from tilefoundry.placer.spaces import _divisors

    assert _divisors(36) == [1, 2, 3, 4, 6, 9, 12, 18, 36] and _divisors(1009 * 1013) == [1, 1009, 1013, 1009 * 1013]
    source = tmp_path / "huge.py"
    source.write_text(_prime(params='a: Tensor[(99999999999, 1024), "bf16"], b: ConstTensor[(1024, 1024), "bf16"]',
                             result="(99999999999, 1024)", dtype="bf16", body="a @ b"), encoding="utf-8")
    code, out, err = _run(capsys, "place", str(source), "--time-limit", "5")
    assert code == 1 and "Traceback" not in err and len(err.splitlines()) == 1
    assert f"{source}:9:5: place: no matmul placement of 'f'" in err and "M 99999999999" in err
