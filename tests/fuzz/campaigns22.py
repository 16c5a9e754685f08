"""The hostile-input campaigns of issue 22, beside issue 11's in ``campaign``:

- ``pack``: buffer CSVs (generated and bench/data/minimalloc/input.12.csv),
  mutated field by field and byte by byte, under hostile ``--capacity`` values;
- ``outputs``: every output flag (``--output``, ``--trace``, ``--html``,
  ``--plot``, ``run --save``, ``pack --plot``) into a FIFO, a directory, a
  missing folder, the path of another flag, an empty path, a device;
- ``env``: ``TILEFOUNDRY_*`` settings (huge, negative, junk, non-ASCII
  digits, thousands of digits) under every subcommand;
- ``semantic``: valid golden programs and zoo files with one meaning changed:
  a loop over an empty or negative range, a constant, a DimVar's range or a
  ``--dim`` binding at an extreme (0, 1, 2**31, 2**63, negative).

Each case function returns a ``campaign.Case`` (argv and environment).
"""
from __future__ import annotations

import os
import random
import re
from pathlib import Path

from tests.fuzz import campaign as base

MINIMALLOC = base.REPO / "bench" / "data" / "minimalloc" / "input.12.csv"
MODELS = base.REPO / "src" / "tilefoundry" / "models"
#: the numbers every semantic mutation draws from: the ends of what an extent,
#: a trip count or a bound can be, and the values just past them
EXTREMES = ("0", "1", "-1", "-64", "2", "3", "7", "2**31", "2**31 - 1", "2**63", "2**63 - 1",
            "2**64", "-2**63", "10**30")
HOSTILE_FIELDS = ("", " ", "-1", "0", "1_0", "+5", "\u0663", "1e3", "0x10", "9" * 400, "9" * 5000,
                  str(2 ** 63), str(-2 ** 63), str(2 ** 64), str(2 ** 62), "x" * 140_000,
                  '"1,2"', '"', "\0", "\f", "\u2028", "\x85", "\x1c", "\v", "\r", "\ufeff",
                  "1\u00a0", "\udcff", "nan", "-0")
HOSTILE_SETTINGS = ("", "0", "1", "-1", "2", "200", "10", "65536", "1" + "0" * 12, "9" * 400,
                    "9" * 5000, str(2 ** 63), str(2 ** 64), "\u0663", "\u0663\u0660", "1_0",
                    "+5", " 5", "5 ", "1e3", "abc", "0x10", "\u00bd", "\u0967\u0968", "-0",
                    "\udcff")


def _write(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8", "surrogateescape"))


# ------------------------------------------------------------------ pack

def _buffer_rows(rng: random.Random) -> list[list[str]]:
    rows = []
    for k in range(rng.randint(1, 14)):
        lower = rng.randint(0, 20)
        rows.append([f"b{k}", str(lower), str(lower + rng.randint(1, 12)), str(rng.randint(0, 16))])
    return rows


def _scaled(rows, rng: random.Random) -> list[list[str]]:
    """Every size and time multiplied or shifted (a change of units)."""
    scale, shift = rng.choice((1, 2 ** 20, 2 ** 36, 2 ** 62)), rng.choice((0, -2 ** 63, 2 ** 40))
    return [[i, str(int(lo) + shift), str(int(up) + shift), str(int(sz) * scale)]
            for i, lo, up, sz in rows]


def pack_case(seed: int, work: Path) -> base.Case:
    rng = random.Random(seed)
    header = ["id", "lower", "upper", "size"]
    if rng.random() < 0.3:
        lines = MINIMALLOC.read_text().splitlines()
        rows = [line.split(",") for line in lines[1:]]
    else:
        rows = _buffer_rows(rng)
    if rng.random() < 0.3:
        rows = _scaled(rows, rng)
    if rng.random() < 0.2:  # the columns in another order
        order = rng.sample(range(4), 4)
        header = [header[i] for i in order]
        rows = [[row[i] for i in order] for row in rows]
    for _ in range(rng.randint(0, 3)):  # hostile fields
        row = rng.randrange(len(rows) + 1)
        target = header if row == len(rows) else rows[row]
        if target:
            target[rng.randrange(len(target))] = rng.choice(HOSTILE_FIELDS)
    newline = rng.choice(("\n", "\n", "\r\n", "\r"))
    text = newline.join(",".join(r) for r in [header, *rows]) + rng.choice((newline, ""))
    if rng.random() < 0.25:
        text = base.mutate_text(text, rng, numbers=HOSTILE_FIELDS[:14])
    _write(work / f"b{seed}.csv", text)
    total = sum(int(r[3]) for r in rows if len(r) > 3 and re.fullmatch(r"[0-9]{1,30}", r[3]))
    capacity = rng.choice((str(total), str(total), str(max(total // 2, 0)), "0", "1", "-1",
                           "1_0", "\u0663", "9" * 5000, str(2 ** 63), str(2 ** 64), "x", ""))
    seconds = rng.choice(("2", "2", "2", "1", "0", "-1", "nan", "inf", "1e308", "x", "0.5", "1_0"))
    argv = ["pack", f"b{seed}.csv", "--capacity", capacity, "--time-limit", seconds]
    argv += rng.choice(([], [], ["--json"], ["--plot", f"b{seed}.svg"] if rng.random() < 0.2 else []))
    return base.Case(argv)


# ------------------------------------------------------------------ outputs

_OUTPUT_COMMANDS = (
    # (flag, argv before the flag, argv after)
    ("--output", ["analyze"], ["p.py"]),
    ("-o", ["analyze", "--compute-cost"], ["p.py"]),
    ("--trace", ["analyze", "--performance"], ["p.py"]),
    ("--html", ["analyze"], ["p.py"]),
    ("--plot", ["analyze", "--roofline"], ["p.py"]),
    ("--plot", ["analyze", "--dim", "seq=96,128"], ["s.py:SeqPool"]),
    ("--save", ["run"], ["p.py"]),
    ("--plot", ["pack", "b.csv", "--capacity", "12"], []),
    ("--output", ["analyze", "--dim", "seq=96,128", "--csv"], ["s.py:SeqPool"]),
)


def _output_path(rng: random.Random, work: Path, seed: int) -> str:
    fifo = work / "pipe.out"
    if not fifo.exists():
        os.mkfifo(fifo)
    (work / "folder").mkdir(exist_ok=True)
    (work / "existing.txt").write_text("old\n")
    return rng.choice(("pipe.out", "folder", "folder/", "no/such/dir/out.txt", "", "existing.txt",
                       f"new{seed}.svg", f"new{seed}.png", f"new{seed}.json", f"new{seed}.html",
                       f"new{seed}.txt", f"new{seed}", "/dev/null", ".", "..", "-", "$x$.svg",
                       "a" * 300, f"folder/../new{seed}.svg", "\0", "existing.txt/child",
                       f"new{seed}.SVG", f"new{seed}.pdf", f"new{seed}.jpeg"))


def outputs_case(seed: int, work: Path) -> base.Case:
    rng = random.Random(seed)
    _copy_inputs(work)
    flag, before, after = rng.choice(_OUTPUT_COMMANDS)
    argv = [*before, flag, _output_path(rng, work, seed)]
    if rng.random() < 0.4:  # a second output flag, maybe naming the same file
        other, extra_before, _ = rng.choice([c for c in _OUTPUT_COMMANDS if c[1][0] == before[0]])
        second = argv[-1] if rng.random() < 0.5 else _output_path(rng, work, seed)
        argv += [*[a for a in extra_before[1:] if a not in argv], other, second]
    return base.Case([*argv, *after])


def _copy_inputs(work: Path) -> None:
    for name, source in (("p.py", base.PROGRAMS / "p16_standalone_sliced_mesh.py"),
                         ("s.py", base.PROGRAMS / "p11_seq_variants.py"),
                         ("b.csv", MINIMALLOC),
                         ("k.mlir", base.INTERTILE / "examples" / "e01_shared_sources_identical.mlir"),
                         ("t.json", base.REPO / "examples" / "relayout_s74.json")):
        if not (work / name).exists():
            (work / name).write_text(source.read_text())


# ------------------------------------------------------------------ env

_ENV_COMMANDS = (
    ["analyze", "--all", "p.py"],
    ["analyze", "--dim", "seq=96,128", "s.py:SeqPool"],
    ["analyze", "--memory", "--dim", "seq=1024", "s.py:SeqPool"],
    ["analyze", "--performance", "--json", "p.py"],
    ["run", "p.py"],
    ["check", "p.py"],
    ["intertile", "verify", "k.mlir"],
    ["intertile", "run", "k.mlir"],
    ["relayout", "classify", "t.json"],
    ["pack", "b.csv", "--capacity", "12"],
    ["pack", "b.csv", "--capacity", "11", "--time-limit", "2"],
    ["models"],
    ["target", "list"],
)


def env_case(seed: int, work: Path) -> base.Case:
    from tilefoundry.limits import LIMITS, variable

    rng = random.Random(seed)
    _copy_inputs(work)
    names = [variable(name) for name in LIMITS] + ["TILEFOUNDRY_VALIDATE_JSON", "TILEFOUNDRY_DEBUG"]
    env = {}
    for name in rng.sample(names, rng.randint(1, 3)):
        value = rng.choice(HOSTILE_SETTINGS)
        if name == "TILEFOUNDRY_DEBUG" and value == "1":
            value = "yes"  # =1 asks for the traceback, which is its documented purpose
        env[name] = value
    return base.Case(list(rng.choice(_ENV_COMMANDS)), env)


# ------------------------------------------------------------------ semantic

#: golden programs: the selections tests/data/programs/expected analyses, and the
#: bindings their DimVars take there
GOLDEN = {
    "p01_rownorm_mesh.py": ((), {}), "p02_dense_bias_gelu.py": ((), {}),
    "p03_tiled_gemm.py": ((), {}), "p04_split_k_partial.py": ((), {}),
    "p05_gqa_decode_online.py": ((), {"ctx": 4096}),
    "p06_module_tree.py": (("MiniStack", "MiniStack.blk1"), {}),
    "p07_multi_result.py": ((), {}), "p08_shape_ops.py": ((), {}),
    "p09_predicates_special.py": ((), {}), "p10_lowp_dtypes.py": ((), {}),
    "p11_seq_variants.py": (("SeqPool",), {"seq": 1024}),
    "p12_smem_overflow.py": ((), {"width": 256}), "p13_b200_residual_layernorm.py": ((), {}),
    "p14_amx_core_gemm.py": ((), {}), "p15_cpu_host_scale.py": ((), {}),
    "p16_standalone_sliced_mesh.py": (("two_branch",), {}),
    "p17_child_function_siblings.py": (("Pipeline.stage1.stage", "Pipeline.both"), {}),
    "p19_unit_factor_split.py": ((), {}),
    "p20_layout_print_forms.py": (("PrintForms.row_scale", "PrintForms.head_major"), {}),
    "p21_mesh_coordinate_loop.py": ((), {"depth": 2048}),
    "p22_broadcast_placement.py": (("Replicated", "ReplicatedCarry"), {}),
    "p23_mma_fragment.py": (("WarpTile", "CFragment"), {}),
    "p24_where_condition_storage.py": ((), {}),
    "p25_mesh_dims_binding.py": ((), {"tokens": 100}),
}
_CONSTANT = re.compile(r"^([A-Z][A-Z0-9_]*) = (\d+)$", re.M)
_DIMVAR = re.compile(r'DimVar\("(\w+)", ([^,()]+), ([^()]+(?:\([^()]*\))?[^()]*)\)')
_LOOP = re.compile(r"for (\w+) in (range|tile)\(([^:]*)\):")
_SHAPE_NUMBER = re.compile(r"(?<=[(, ])\d+(?=[,)])")


def _constants(text: str) -> list:
    """The config constants a mutation may change: not those the file's own
    Python loops over at import (``range(LAYERS)`` building the layer copies):
    a program that loops 2**63 times while it loads is the program's hang."""
    own_loops = {name for line in text.splitlines() if "renamed(" in line
                 for name in re.findall(r"range\((\w+)\)", line)}
    return [m for m in _CONSTANT.finditer(text) if m.group(1) not in own_loops]


def _zoo_selection(rng: random.Random) -> tuple[str, str, dict]:
    from tilefoundry.models import MODELS

    model = rng.choice(MODELS)
    # not a whole-model decode step: inlining every layer of a mutated file is the
    # zoo tests' cost, not one fuzz case's
    selection = rng.choice([s for s in model.selections if s.kind != "decode-step"])
    return model.file, selection.selector, dict(selection.dims)


def _mutate_semantics(text: str, dims: dict, rng: random.Random) -> tuple[str, dict]:
    """One to two changes of meaning, each still a program a user could write."""
    for _ in range(rng.randint(1, 2)):
        pick = rng.randrange(5)
        if pick == 0 and _LOOP.search(text):  # an empty, negative or extreme loop
            loops = list(_LOOP.finditer(text))
            found = rng.choice(loops)
            args = rng.choice(("5, 0", "-64, 16", "0", "-3", "100, 10", "0, 0", "-5, -1",
                               "2**63", "0, 2**63, 2**62", "10, 0, -1", "3, 10, 0"))
            kind = found.group(2) if rng.random() < 0.7 else rng.choice(("range", "tile"))
            if kind == "tile" and rng.random() < 0.5:
                bound = found.group(3).split(",")[0]
                args = f"{bound}, {rng.choice(('0', '-16', '2**63', '1', '-1'))}"
            text = text[:found.start()] + f"for {found.group(1)} in {kind}({args}):" + text[found.end():]
        elif pick == 1 and _constants(text):  # a config constant at an extreme
            found = rng.choice(_constants(text))
            text = text[:found.start(2)] + rng.choice(EXTREMES) + text[found.end(2):]
        elif pick == 2 and _DIMVAR.search(text):  # a DimVar's range at an extreme
            found = rng.choice(list(_DIMVAR.finditer(text)))
            low, high = rng.choice(((rng.choice(EXTREMES), found.group(3)),
                                    (found.group(2), rng.choice(EXTREMES)),
                                    (rng.choice(EXTREMES), rng.choice(EXTREMES))))
            text = (text[:found.start()] + f'DimVar("{found.group(1)}", {low}, {high})'
                    + text[found.end():])
        elif pick == 3 and dims:  # a binding at an extreme (or the ends of its range)
            name = rng.choice(sorted(dims))
            dims = {**dims, name: rng.choice(("0", "1", "2", "-1", "7", str(2 ** 31),
                                               str(2 ** 63), str(2 ** 63 - 1), str(2 ** 64),
                                               "16384", "16385", "4097", "65"))}
        else:  # a literal extent of a Tensor[...] annotation
            shapes = [m for m in re.finditer(r"Tensor\[\(([^\]]*)\)", text)]
            if shapes:
                shape = rng.choice(shapes)
                numbers = list(_SHAPE_NUMBER.finditer(text, shape.start(1), shape.end(1)))
                if numbers:
                    number = rng.choice(numbers)
                    text = text[:number.start()] + rng.choice(EXTREMES) + text[number.end():]
    return text, dims


def semantic_case(seed: int, work: Path) -> base.Case:
    rng = random.Random(seed)
    if rng.random() < 0.35:
        file, selector, dims = _zoo_selection(rng)
        text = (MODELS / file).read_text()
    else:
        file = rng.choice(sorted(GOLDEN))
        selectors, dims = GOLDEN[file]
        text, selector = (base.PROGRAMS / file).read_text(), rng.choice(selectors or ("",))
    text, dims = _mutate_semantics(text, {k: str(v) for k, v in dims.items()}, rng)
    name = f"s{seed}_{file}"
    _write(work / name, text)
    command = rng.choice((["analyze"], ["analyze", "--all"], ["analyze", "--compute-cost"],
                          ["analyze", "--memory"], ["analyze", "--performance"],
                          ["analyze", "--roofline"], ["analyze", "--collectives"],
                          ["analyze", "--top", "3"], ["analyze", "--performance", "--trace",
                                                      f"s{seed}.trace.json"],
                          ["analyze", "--json", "--compute-cost"]))
    if file in GOLDEN and rng.random() < 0.15:  # the zoo's layers are too large to run
        command = rng.choice((["run"], ["check", "--placed"]))
    bindings = [arg for k, v in sorted(dims.items()) for arg in ("--dim", f"{k}={v}")]
    source = f"{name}:{selector}" if selector else name
    # a run's values are allocated: keep them small so a case cannot take the machine
    env = {"TILEFOUNDRY_MAX_EVAL_ELEMENTS": str(1 << 24)} if command[0] != "analyze" else {}
    return base.Case([*command, *bindings, source], env)


CAMPAIGNS = {"pack": pack_case, "outputs": outputs_case, "env": env_case, "semantic": semantic_case}
