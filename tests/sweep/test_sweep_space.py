"""Issue 24 item 1: a sweep space is read and checked before any point is
built; a hostile one (unknown keys, empty lists, a range of step 0, a wrong
type, a million points) refuses in one line naming the key and its line."""
from __future__ import annotations

import pytest

from tests.sweep.sweep_helpers import P11, SMALL_POINTS, run_cli, small, space
from tilefoundry.api import FAMILIES

SEQPOOL = 'selections = ["p11_seq_variants.py:SeqPool"]\n'

HOSTILE = [
    ("unknown top key",
     SEQPOOL + 'target = ["nvidia.h200_sxm"]\n',
     "space.toml:2: 'target' is not a key of a sweep space; a space states selections, dims, "
     "targets, topologies, families, table; did you mean 'targets'?"),
    ("unknown range key",
     SEQPOOL + "[dims]\nseq = {start = 64, stop = 512, stride = 64}\n",
     "space.toml:3: dims.seq.stride: 'stride' is not a key of a range; a range is {start, stop, step}"),
    ("range of step 0",
     SEQPOOL + "[dims]\nseq = {start = 64, stop = 512, step = 0}\n",
     "space.toml:3: dims.seq.step: step is 0; a range counts up from start to below stop by a positive step"),
    ("range of negative step",
     SEQPOOL + "[dims]\nseq = {start = 512, stop = 64, step = -64}\n",
     "space.toml:3: dims.seq.step: step is -64; a range counts up"),
    ("empty range",
     SEQPOOL + "[dims]\nseq = {start = 512, stop = 512}\n",
     "space.toml:3: dims.seq: the range from 512 to below 512 is empty"),
    ("empty selections", "selections = []\n",
     "space.toml:1: selections: the list is empty"),
    ("no selections", "[dims]\nseq = [1]\n",
     "space.toml: 'selections' is required"),
    ("empty dim list", SEQPOOL + "[dims]\nseq = []\n",
     "space.toml:3: dims.seq: the list is empty; give one or more extents"),
    ("empty targets", SEQPOOL + "targets = []\n",
     "space.toml:2: targets: the list is empty"),
    ("empty families", SEQPOOL + "families = []\n",
     "space.toml:2: families: the list is empty"),
    ("a string of extents", SEQPOOL + "[dims]\nseq = \"96,128\"\n",
     "space.toml:3: dims.seq: give a list of extents (seq = [64, 128]) or a range"),
    ("a float extent", SEQPOOL + "[dims]\nseq = [96, 128.0]\n",
     "space.toml:3: dims.seq[1]: an extent is a whole number such as 128, got a number (128.0)"),
    ("a boolean extent", SEQPOOL + "[dims]\nseq = [true]\n",
     "space.toml:3: dims.seq[0]: an extent is a whole number such as 128, got a boolean (True)"),
    ("a negative extent", SEQPOOL + "[dims]\nseq = [-1]\n",
     "space.toml:3: dims.seq[0]: -1 is negative"),
    ("an extent twice", SEQPOOL + "[dims]\nseq = [96, 96]\n",
     "space.toml:3: dims.seq: 96 is listed twice; list each extent once"),
    ("selections not a list", 'selections = "p11_seq_variants.py"\n',
     "space.toml:1: selections: give a list of 'file.py[:Selector]' or zoo model names, got a string"),
    ("a selection not a string", "selections = [3]\n",
     "space.toml:1: selections[0]: each of 'file.py[:Selector]' or zoo model names is a non-empty "
     "string, got an integer (3)"),
    ("a missing file", 'selections = ["nowhere.py:X"]\n',
     "space.toml:1: selections[0]: nowhere.py: no such file"),
    ("an unknown zoo model", 'selections = ["llama3-8"]\n',
     "space.toml:1: selections[0]: 'llama3-8' is neither a Python file (file.py[:Selector]) nor a zoo "
     "model"),
    ("an unknown zoo selection", 'selections = ["llama3-8b:Llama3_8B.layer9"]\n',
     "space.toml:1: selections[0]: zoo model llama3-8b has no selection 'Llama3_8B.layer9'"),
    # a model name alone covers its placed roots (issue 40 item 5): the H200's embed among them
    ("a selection twice", 'selections = ["llama3-8b", "llama3-8b:Llama3_8B_H200.embed"]\n',
     "space.toml:1: selections[1]: 'llama3-8b:Llama3_8B_H200.embed' is named twice"),
    ("an unknown target", SEQPOOL + 'targets = ["nvidia.h300"]\n',
     "space.toml:2: targets[0]: unknown target 'nvidia.h300'"),
    ("an unknown family", SEQPOOL + 'families = ["memroy"]\n',
     f"space.toml:2: families: 'memroy' is not an analysis family; the families are {', '.join(FAMILIES)} "
     "(or 'all'); did you mean 'memory'?"),
    ("a dim no selection reaches", SEQPOOL + "[dims]\nctx_len = [128]\n",
     "space.toml:3: dims.ctx_len: no selection reaches a dimension named 'ctx_len'; they reach seq"),
    ("a dim named like a column", SEQPOOL + "[dims]\nstatus = [1]\n",
     "space.toml:3: dims.status: 'status' names a column of the table"),
    ("a table of another format", SEQPOOL + 'table = "out.json"\n',
     "space.toml:2: table: the table is a path ending .csv or .parquet, got 'out.json'"),
    ("not TOML", SEQPOOL + "[dims\n",
     "space.toml:2:6: not TOML:"),
    ("a million points",
     SEQPOOL + 'targets = ["nvidia.h100_sxm", "nvidia.h200_sxm"]\n'
               "[dims]\nseq = {start = 1, stop = 500001}\n",
     "space.toml asks for 1,000,000 points (1 selection x 500000 seq values x 2 targets) "
     "(limit 10,000 points of one sweep); raise the limit with TILEFOUNDRY_MAX_SWEEP_POINTS=N if "
     "this input is meant"),
]


@pytest.mark.parametrize("text, line", [(t, line) for _, t, line in HOSTILE],
                         ids=[name for name, _, _ in HOSTILE])
def test_a_hostile_space_refuses_in_one_line(tmp_path, capsys, monkeypatch, text, line):
    path = space(tmp_path, text)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "sweep", "--dry-run", path.name)
    assert code == 1 and out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(f"tilefoundry: error: {line}"), err
    assert not (tmp_path / "space.csv").exists()


def test_a_million_zoo_points_are_refused_before_any_program_loads(tmp_path, capsys, monkeypatch):
    """The lower bound (selections x targets x levels, as if no dim bound
    anything) refuses a space at once, before any program is loaded to learn
    which dims bind which selection."""
    levels = ", ".join(f'"l{i}"' for i in range(200))
    path = space(tmp_path, f'selections = ["llama3-8b", "qwen3-moe"]\ntopologies = [{levels}]\n'
                           "[dims]\nctx_len = {start = 128, stop = 100000000, step = 128}\n")
    import tilefoundry.dsl.loader as loader

    monkeypatch.setattr(loader, "selection_loader", lambda path: pytest.fail("loaded a program"))
    monkeypatch.setenv("TILEFOUNDRY_MAX_SWEEP_POINTS", "3000")
    code, _, err = run_cli(capsys, "sweep", "--dry-run", path)
    assert code == 1 and err.count("\n") == 1
    # each model name covers its placed roots, each on its own target (issue 40 item 5)
    from tilefoundry.dsl.zoo_names import zoo_selections

    count = sum(len(zoo_selections(name, None)) for name in ("llama3-8b", "qwen3-moe"))
    assert (f"asks for at least {count * 200:,} points ({count} selections x 200 topologies, before "
            "any dim) (limit 3,000") in err


def test_the_bound_can_be_raised(tmp_path, capsys, monkeypatch):
    path = small(tmp_path)
    monkeypatch.setenv("TILEFOUNDRY_MAX_SWEEP_POINTS", str(SMALL_POINTS - 1))
    code, _, err = run_cli(capsys, "sweep", "--dry-run", path)
    assert code == 1 and f"asks for {SMALL_POINTS} points" in err
    monkeypatch.setenv("TILEFOUNDRY_MAX_SWEEP_POINTS", str(SMALL_POINTS))
    code, out, err = run_cli(capsys, "sweep", "--dry-run", path)
    assert code == 0, err


def test_dry_run_counts_and_estimates(tmp_path, capsys):
    path = small(tmp_path)
    code, out, err = run_cli(capsys, "sweep", "--dry-run", "--jobs", "2", path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == (f"# sweep {path}: {SMALL_POINTS} points (1 selection x 3 seq values x 3 targets "
                        "x 2 topologies + 1 selection x 3 targets x 2 topologies)")
    assert "dim         seq: 3 values 96..1024 (binds 1 selection)" in lines
    assert lines[-2] == f"table       {tmp_path / 'space.csv'} (new)"
    assert lines[-1].startswith("estimate    ~") and "on 2 local workers" in lines[-1]
    assert not (tmp_path / "space.csv").exists()  # a dry run writes nothing


def test_a_range_is_start_to_below_stop(tmp_path):
    from tilefoundry.sweep.space import load_space

    path = space(tmp_path, 'selections = ["p11_seq_variants.py:SeqPool"]\n'
                           "[dims]\nseq = {start = 64, stop = 257, step = 64}\n")
    loaded = load_space(str(path))
    assert list(loaded.dims["seq"]) == [64, 128, 192, 256]
    assert [p.dims for p in loaded.points()] == [(("seq", v),) for v in (64, 128, 192, 256)]


def test_a_dim_binds_only_the_selections_that_reach_it(tmp_path):
    """ctx_len binds llama's decoder layer, not its embed (which runs once per
    target); the zoo's own ctx_len=4096 is what a layer runs at unswept."""
    from tilefoundry.sweep.space import load_space

    path = space(tmp_path, 'selections = ["llama3-8b:Llama3_8B.embed", "llama3-8b:Llama3_8B.layer0", '
                           '"p11_seq_variants.py:SeqPool"]\n'
                           'targets = ["nvidia.h100_sxm", "nvidia.h200_sxm"]\n'
                           "[dims]\nctx_len = [1024, 2048]\nseq = [96]\n")
    loaded = load_space(str(path))
    assert loaded.binds == {"llama3-8b:Llama3_8B.embed": (), "llama3-8b:Llama3_8B.layer0": ("ctx_len",),
                            "p11_seq_variants.py:SeqPool": ("seq",)}
    assert loaded.count() == 2 + 4 + 2
    layer = next(s for s in loaded.selections if s.name.endswith("layer0"))
    assert layer.fixed == (("ctx_len", 4096),) and layer.zoo == "llama3-8b"
    keys = [p.key(loaded.dim_names) for p in loaded.points()]
    assert keys[:3] == [("llama3-8b:Llama3_8B.embed", "nvidia.h100_sxm", None, None, None),
                        ("llama3-8b:Llama3_8B.embed", "nvidia.h200_sxm", None, None, None),
                        ("llama3-8b:Llama3_8B.layer0", "nvidia.h100_sxm", None, 1024, None)]


def test_a_program_that_does_not_load_refuses_the_space(tmp_path, capsys):
    (tmp_path / "broken.py").write_text("import nothing_of_that_name\n")
    path = space(tmp_path, 'selections = ["broken.py"]\n[dims]\nseq = [1]\n', copies=())
    code, _, err = run_cli(capsys, "sweep", "--dry-run", path)
    assert code == 1 and err.count("\n") == 1
    assert "space.toml:1: selections: 'broken.py' does not load: " in err
    assert "nothing_of_that_name" in err


def test_the_space_file_itself_is_checked(tmp_path, capsys):
    code, _, err = run_cli(capsys, "sweep", tmp_path / "none.toml")
    assert code == 1 and "none.toml: no such file" in err
    bad = tmp_path / "latin1.toml"
    bad.write_bytes(b'selections = ["caf\xe9.py"]\n')
    code, _, err = run_cli(capsys, "sweep", bad)
    assert code == 1 and "latin1.toml:1:19: byte 0xe9 is not UTF-8" in err


@pytest.mark.parametrize("argv, says", [
    (["--jobs", "2", "--scheduler", "tcp://x:1", "S.toml"], "--jobs sizes the local pool"),
    (["--report", "t.csv", "S.toml"], "give SPACE.toml to run it, or --report TABLE"),
    (["--report", "t.csv", "--resume"], "--resume runs a space"),
    ([], "sweep: SPACE.toml is required"),
    (["--jobs", "0", "S.toml"], "--jobs takes a positive whole number, got '0'"),
    (["-o", "t.json", "S.toml"], "--output t.json: a sweep table is FILE.csv or FILE.parquet"),
    (["--dry-run", "--json", "S.toml"], "--dry-run runs nothing"),
])
def test_a_malformed_command_line_is_one_line_exit_2(capsys, argv, says):
    code, _, err = run_cli(capsys, "sweep", *argv)
    assert code == 2 and err.count("\n") == 1 and says in err, err


def test_p11_is_where_the_helpers_say():
    assert P11.is_file()


def test_the_zoo_example_space_counts_what_the_docs_say():
    """docs/views.md's worked example: each model name covers its placed roots, one per
    target, each run on its own target only (issue 40 item 5); the selections that
    reach ctx_len (the zoo's own binding) run at each of its 16 values."""
    import tomllib

    from tests.sweep.sweep_helpers import HERE
    from tilefoundry.dsl.zoo_names import zoo_selections
    from tilefoundry.sweep.space import load_space

    path = HERE.parents[1] / "examples" / "sweep_zoo.toml"
    written = tomllib.loads(path.read_text(encoding="utf-8"))
    picks = [p for name in written["selections"]
             for p in zoo_selections(name, None, tuple(written["targets"]))]
    swept = [p for p in picks if "ctx_len" in dict(p.dims)]
    loaded = load_space(str(path))
    assert [s.name for s in loaded.selections] == [p.name for p in picks]
    assert loaded.count() == len(picks) - len(swept) + 16 * len(swept)
    # nvidia.h200_sxm runs the _H200 root's selections only
    assert all(loaded.targets_of(s) == (s.target,) and
               f"_{s.target.split('.')[1].split('_')[0].upper()}." in s.name for s in loaded.selections)
    assert sum(1 for names in loaded.binds.values() if "ctx_len" in names) == len(swept)
    assert loaded.breakdown() == (f"{len(swept)} selections x 16 ctx_len values x 1 target + "
                                  f"{len(picks) - len(swept)} selections x 1 target")