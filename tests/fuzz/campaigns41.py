"""The hostile-input campaigns of issue 41 (item 5), beside issues 11 and 22's:
what the batch added, each case judged by the same promise (``campaign.judge``).

- ``targets``: a shipped hardware document (``target/hardware/*.toml``, the
  estimate's target facts) damaged one way -- a fact's source, unit or value
  gone, a constant negative, zero or absurd (2**63, 10**30), a value of
  another kind, the document table broken, bytes that are not UTF-8 -- then
  read by ``target show``, ``target list`` or an analysis with every family
  (the estimate's included) against it. Beyond the promise, a damaged
  document must not be silently accepted where it states a number no
  hardware has: a negative constant, or a source left out (``silent``).
- ``diff``: ``tilefoundry diff`` command lines: two selections, one under two
  ``--target`` or one ``--dim NAME=V1,V2``, with hostile selections, targets,
  extents, levels and ``--top`` counts.
- ``checkpoints``: a Hugging Face checkpoint directory (two bf16 shards, their
  index, config.json) for the zoo's Llama layer, damaged -- a shard missing or
  truncated, the index naming a missing tensor or shard, config.json not JSON
  or of other dims, a tensor of another shape or dtype, no index -- and given
  as ``run --weights DIR``.
- ``place``: ``tilefoundry place`` of its test kernels, mutated, under hostile
  ``--level``, ``--time-limit``, ``--top``, ``--seed``, ``--dim`` and ``--output``.
- ``sweep``: spaces built of hostile keys, lists, ranges (past 2**63 values, a
  step of 0, 300 nested arrays) run ``--dry-run``, and damaged sweep tables
  (a cell of another type or past the CSV cell limit, another header, bytes
  that are not UTF-8) read by ``--report``: the kinds of item 1, as a class.

Each case function returns a ``campaign.Case``; a case that changes the
process's state (the hardware folder) does it in ``Case.setup``, a context
manager around the judged run.
"""
from __future__ import annotations

import contextlib
import json
import random
import re
import shutil
from pathlib import Path

from tests.fuzz import campaign as base

HARDWARE = base.REPO / "src" / "tilefoundry" / "target" / "hardware"
PLACE = base.REPO / "tests" / "place" / "data"
#: what a damaged constant becomes
ABSURD = ("-1", "-132", "0", str(2 ** 63), str(2 ** 64), "1" + "0" * 30, "-" + str(2 ** 63), "1.5",
          "true", '"many"', "[]", "{}", '"unavailable"', "1e9")
#: the fields of a fact a damage may remove or spoil
FIELDS = ("value", "unit", "origin", "source", "conditions", "derivation")


# ------------------------------------------------------------------ targets


@contextlib.contextmanager
def hardware_folder(folder: Path):
    """Every hardware document read from ``folder`` for the judged run, the
    caches of what was read (documents, facts, targets) emptied before and after."""
    from tilefoundry.target import base as target_base
    from tilefoundry.target import documents

    def forget():
        for cached in (documents._kept_parses, documents._parse_file, documents._all_documents):
            cached.cache_clear()
        target_base._FACTS_CACHE.clear()

    original = documents.hardware_dir
    forget()
    documents.hardware_dir = lambda: folder
    try:
        yield
    finally:
        documents.hardware_dir = original
        forget()


def _fact_blocks(text: str) -> list[tuple[int, int]]:
    """(start, end) of each ``[facts....]`` table's text."""
    heads = [m.start() for m in re.finditer(r"^\[", text, re.M)] + [len(text)]
    return [(a, b) for a, b in zip(heads, heads[1:]) if text.startswith("[facts.", a)]


def damage_document(text: str, rng: random.Random) -> tuple[str, str]:
    """(damaged text, what was done) of one hardware document."""
    blocks = _fact_blocks(text)
    start, end = rng.choice(blocks)
    block = text[start:end]
    way = rng.choice(("drop field", "constant", "constant", "constant", "blank field", "drop table",
                      "document", "bytes", "duplicate", "nest"))
    if way == "drop field":
        field = rng.choice(FIELDS)
        done = f"drop {field}"
        block = re.sub(rf"^{field} = .*\n", "", block, flags=re.M)
    elif way == "constant":
        value = rng.choice(ABSURD)
        done = f"value {value}"
        block = re.sub(r"^value = .*$", f"value = {value}", block, count=1, flags=re.M)
    elif way == "blank field":
        field = rng.choice(FIELDS[1:])
        done = f"blank {field}"
        block = re.sub(rf"^{field} = .*$", f'{field} = "  "', block, count=1, flags=re.M)
    elif way == "drop table":
        done, block = "drop fact", ""
    elif way == "document":
        key = rng.choice(("id", "kind", "family", "architecture", "title"))
        value = rng.choice(('""', '"nvidia.sm90"', '"nope"', "5", '"device"', '"architecture"'))
        done = f"document {key} = {value}"
        text = re.sub(rf"^{key} = .*$", f"{key} = {value}", text, count=1, flags=re.M)
    elif way == "bytes":
        done = "not UTF-8"
        at = rng.randrange(len(block) + 1)
        block = block[:at] + "\udcff" + block[at:]
    elif way == "duplicate":
        done, block = "fact twice", block + block
    else:
        depth = rng.choice((3, 50, 400))
        done = f"nest {depth}"
        block = re.sub(r"^value = .*$", "value = " + "[" * depth + "1" + "]" * depth, block, count=1,
                       flags=re.M)
    if block == text[start:end] and way not in ("document",):
        done += " (no change: the fact has no such line)"  # an unavailable fact states no value or source
    return text[:start] + block + text[end:], done


#: the device a command asks for when a document is damaged: itself, or a device of the architecture
_DEVICE_OF = {"apple_amx.toml": "apple.m2_pro", "apple_m2_pro.toml": "apple.m2_pro",
              "ibm_spyre.toml": "ibm.spyre_32core", "ibm_spyre_32core.toml": "ibm.spyre_32core",
              "nvidia_b200_sxm.toml": "nvidia.b200_sxm", "nvidia_h100_sxm.toml": "nvidia.h100_sxm",
              "nvidia_h200_sxm.toml": "nvidia.h200_sxm", "nvidia_sm100.toml": "nvidia.b200_sxm",
              "nvidia_sm90.toml": "nvidia.h200_sxm"}
#: a program each analysis runs (small: the target's facts are what is fuzzed)
_TARGET_PROGRAMS = {"cuda": "p03_tiled_gemm.py", "amx": "p14_amx_core_gemm.py", "cpu": "p14_amx_core_gemm.py"}


def targets_case(seed: int, work: Path) -> base.Case:
    rng = random.Random(seed)
    folder = work / f"hardware{seed % 4}"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(HARDWARE, folder, ignore=shutil.ignore_patterns("parsed.json"))
    files = sorted(p.name for p in folder.glob("*.toml"))
    name = rng.choice(files)
    text, done = damage_document((HARDWARE / name).read_text(encoding="utf-8"), rng)
    (folder / name).write_bytes(text.encode("utf-8", "surrogateescape"))
    device = _DEVICE_OF[name]
    for program in _TARGET_PROGRAMS.values():
        shutil.copy(base.PROGRAMS / program, work / program)
    family = "amx" if device.startswith("apple") else "cpu" if device.startswith("ibm") else "cuda"
    argv = rng.choice((["target", "show", device], ["target", "list"],
                       ["analyze", "--all", "--target", device, _TARGET_PROGRAMS[family]],
                       ["analyze", "--estimate", "--performance", "--target", device, _TARGET_PROGRAMS[family]]))
    return base.Case(argv, setup=lambda: hardware_folder(folder), note=f"{name}: {done}")


def silent_target_kind(case: base.Case, verdict: base.Verdict) -> str | None:
    """A damaged document accepted where it states what no hardware has."""
    if verdict.outcome != "accepted" or not case.note:
        return None
    done = case.note.split(": ", 1)[1]
    if done in ("value -1", "value -132", f"value -{2 ** 63}") and case.argv[:2] == ["target", "show"]:
        return "negative constant accepted"
    if done in ("drop source", "blank source") and case.argv[:2] == ["target", "show"]:
        return "fact without a source accepted"
    return None


# ------------------------------------------------------------------ diff

_DIFF_SELECTIONS = ("p03_tiled_gemm.py", "p04_split_k_partial.py", "p11_seq_variants.py:SeqPool",
                    "p01_rownorm_mesh.py", "missing.py", "p03_tiled_gemm.py:Nope", "", "-", "llama3-8b",
                    "llama3-8b:Llama3_8B.layer0", "nope-model", "p03_tiled_gemm.py:TiledGemm.nope")
_DIFF_TARGETS = ("nvidia.h200_sxm", "nvidia.h100_sxm", "nvidia.b200_sxm", "apple.m2_pro", "nope", "",
                 "nvidia.sm90", "cpu.host")
_DIFF_DIMS = ("seq=96,1024", "seq=96", "seq=0,1", "seq=-1,5", "seq=96,96", "seq=1,2,3", "seq=",
              "seq=2**63,1", f"seq={2 ** 63},1", "seq=96,\u0663", "nope=1,2", "=1,2", "seq=4097,1",
              "ctx_len=64,128")


def diff_case(seed: int, work: Path) -> base.Case:
    """One diff of each form (two selections, two targets, one dim's two
    values), well formed, then 0 to 2 of its parts made hostile."""
    rng = random.Random(seed)
    for name in ("p03_tiled_gemm.py", "p04_split_k_partial.py", "p11_seq_variants.py", "p01_rownorm_mesh.py"):
        shutil.copy(base.PROGRAMS / name, work / name)
    form = rng.choice(("selections", "targets", "dims"))
    if form == "selections":
        argv = ["diff", *rng.sample(["p03_tiled_gemm.py", "p04_split_k_partial.py", "p01_rownorm_mesh.py"], 2)]
    elif form == "targets":
        argv = ["diff", rng.choice(("p03_tiled_gemm.py", "p04_split_k_partial.py")),
                "--target", "nvidia.h200_sxm", "--target", rng.choice(("nvidia.h100_sxm", "nvidia.b200_sxm"))]
    else:
        argv = ["diff", "p11_seq_variants.py:SeqPool", "--dim", rng.choice(("seq=96,1024", "seq=128,96", "seq=1,4096"))]
    for _ in range(rng.choice((0, 1, 1, 2))):
        at = rng.randrange(1, len(argv))
        if argv[at].startswith("--"):
            continue
        pool = _DIFF_DIMS if argv[at - 1] == "--dim" else _DIFF_TARGETS if argv[at - 1] == "--target" \
            else _DIFF_SELECTIONS
        argv[at] = rng.choice(pool)
    if rng.random() < 0.2:
        argv += rng.choice((["--target", rng.choice(_DIFF_TARGETS)], ["--dim", rng.choice(_DIFF_DIMS)],
                            [rng.choice(_DIFF_SELECTIONS)]))
    if rng.random() < 0.3:
        argv += ["--topology", rng.choice(("cta", "cta", "thread", "nope", "", "core"))]
    if rng.random() < 0.3:
        argv += ["--top", rng.choice(("0", "1", "-1", "3", "1000000000", str(2 ** 63), "x", ""))]
    if rng.random() < 0.5:
        argv.append("--json")
    return base.Case(argv)


# ------------------------------------------------------------------ checkpoints

_TINY = {"vocab_size": 256, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
         "head_dim": 16, "intermediate_size": 128, "num_hidden_layers": 2, "rms_norm_eps": 1e-5,
         "max_position_embeddings": 64, "rope_theta": 500000.0, "model_type": "llama"}
_SHAPES = {"input_layernorm": (64,), "post_attention_layernorm": (64,), "self_attn.q_proj": (64, 64),
           "self_attn.k_proj": (32, 64), "self_attn.v_proj": (32, 64), "self_attn.o_proj": (64, 64),
           "mlp.gate_proj": (128, 64), "mlp.up_proj": (128, 64), "mlp.down_proj": (64, 128)}
_SHARDS = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")


def write_checkpoint(folder: Path, rng: random.Random, config: dict | None = None,
                     shapes: dict | None = None, dtype=None) -> dict:
    """A two-shard checkpoint of the tiny Llama (the shape tests/models writes); its weight map."""
    import ml_dtypes
    import numpy as np
    from safetensors.numpy import save_file

    dtype = dtype or ml_dtypes.bfloat16
    numbers = np.random.default_rng(rng.randrange(2 ** 32))
    tensors = {}
    for layer in range(2):
        for name, shape in (shapes or _SHAPES).items():
            tensors[f"model.layers.{layer}.{name}.weight"] = (numbers.standard_normal(shape) * 0.2).astype(dtype)
    tensors["model.embed_tokens.weight"] = numbers.standard_normal((256, 64)).astype(dtype)
    tensors["model.norm.weight"] = np.ones(64, dtype)
    tensors["lm_head.weight"] = (numbers.standard_normal((256, 64)) * 0.2).astype(dtype)
    names = sorted(tensors)
    parts = {_SHARDS[0]: names[: len(names) // 2], _SHARDS[1]: names[len(names) // 2:]}
    for shard, keys in parts.items():
        save_file({k: tensors[k] for k in keys}, str(folder / shard))
    weight_map = {k: shard for shard, keys in parts.items() for k in keys}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    (folder / "config.json").write_text(json.dumps(config or _TINY))
    return weight_map


def _endless() -> tuple:
    """A shard name that never ends (a device), only where this process's
    memory is capped (bench/fuzz.py caps it; a test process is not)."""
    import resource

    return ("/dev/zero",) if resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY else ()



def _damage_checkpoint(folder: Path, rng: random.Random) -> str:
    import numpy as np

    way = rng.choice(("none", "drop shard", "truncate shard", "index missing tensor", "index missing shard",
                      "index not json", "no index", "config not json", "config dims", "config absent",
                      "shape", "dtype", "empty dir", "shard garbage", "config field type"))
    if way == "shape":
        shapes = dict(_SHAPES)
        key = rng.choice(sorted(shapes))
        shapes[key] = tuple(s * 2 for s in shapes[key])
        write_checkpoint(folder, rng, shapes=shapes)
        return way
    if way == "dtype":
        write_checkpoint(folder, rng, dtype=rng.choice((np.float32, np.float16, np.int8, np.float64)))
        return way
    if way in ("config dims", "config field type"):
        config = dict(_TINY)
        key = rng.choice(sorted(config))
        config[key] = rng.choice((0, -1, 3, 10 ** 30, 2 ** 63, None, "x", [], 1.5)) if way == "config dims" \
            else rng.choice(({}, [1], "64", True))
        write_checkpoint(folder, rng, config=config)
        return f"{way} {key}"
    weight_map = write_checkpoint(folder, rng)
    index = folder / "model.safetensors.index.json"
    if way == "drop shard":
        (folder / rng.choice(_SHARDS)).unlink()
    elif way == "truncate shard":
        shard = folder / rng.choice(_SHARDS)
        data = shard.read_bytes()
        shard.write_bytes(data[: rng.randrange(len(data))])
    elif way == "shard garbage":
        shard = folder / rng.choice(_SHARDS)
        data = bytearray(shard.read_bytes())
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(min(len(data), 200))] = rng.randrange(256)
        shard.write_bytes(bytes(data))
    elif way == "index missing tensor":
        weight_map.pop(rng.choice(sorted(weight_map)))
        index.write_text(json.dumps({"weight_map": weight_map}))
    elif way == "index missing shard":
        key = rng.choice(sorted(weight_map))
        weight_map[key] = rng.choice(("nope.safetensors", "../config.json", "") + _endless())
        index.write_text(json.dumps({"weight_map": weight_map}))
    elif way == "index not json":
        index.write_text(rng.choice(("{", "[]", '{"weight_map": 5}', "", '{"weight_map": {"a": 5}}')))
    elif way == "no index":
        index.unlink()
    elif way == "config not json":
        (folder / "config.json").write_text(rng.choice(("{", "[]", "", "nan", '{"hidden_size": "64"}')))
    elif way == "config absent":
        (folder / "config.json").unlink()
    elif way == "empty dir":
        for path in folder.iterdir():
            path.unlink()
    return way


def checkpoints_case(seed: int, work: Path) -> base.Case:
    import numpy as np

    from tilefoundry.models import model_named

    rng = random.Random(seed)
    folder = work / f"ckpt{seed % 4}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    done = _damage_checkpoint(folder, rng)
    np.savez(work / "in.npz", pos=np.array([5], np.int32), n_new=np.array([1], np.int32))
    layer = rng.choice(("layer0", "layer1"))
    source = f"{model_named('llama3-8b').source}:Llama3_8B.{layer}"
    argv = ["run", "--weights", str(folder), "--dim", f"ctx_len={rng.choice((32, 32, 64, 0, 4096))}",
            "--inputs", "in.npz", source]
    return base.Case(argv, note=done)


# ------------------------------------------------------------------ place


def place_case(seed: int, work: Path) -> base.Case:
    rng = random.Random(seed)
    name = rng.choice(sorted(p.name for p in PLACE.glob("*.py")))
    text = (PLACE / name).read_text(encoding="utf-8")
    if rng.random() < 0.4:
        text = base.mutate_text(text, rng)
    (work / name).write_text(text, encoding="utf-8", errors="surrogateescape")
    argv = ["place", name, "--time-limit", rng.choice(("0.5", "1", "0", "-1", "nan", "inf", "1e-9", "x", "2"))]
    if rng.random() < 0.3:
        argv += ["--level", rng.choice(("cta", "thread", "warp", "nope", "", "core"))]
    if rng.random() < 0.3:
        argv += ["--top", rng.choice(("0", "1", "3", "-1", str(2 ** 63), "x"))]
    if rng.random() < 0.3:
        argv += ["--seed", rng.choice(("0", "-1", str(2 ** 64), "x", "7"))]
    if rng.random() < 0.3:
        argv += ["--dim", rng.choice(("N=64", "N=0", "N=-1", f"N={2 ** 63}", "nope=3", "M=4096", "=1"))]
    if rng.random() < 0.3:
        argv += ["--target", rng.choice(("nvidia.h200_sxm", "nvidia.b200_sxm", "apple.m2_pro", "nope"))]
    if rng.random() < 0.2:
        argv += ["--output", rng.choice(("out.py", ".", "", "missing/out.py", name))]
    if rng.random() < 0.5:
        argv.append("--json")
    return base.Case(argv)


CAMPAIGNS = {"targets": targets_case, "diff": diff_case, "checkpoints": checkpoints_case, "place": place_case}
#: the silent kinds each campaign judges beyond the promise
SILENT = {"targets": silent_target_kind}


# ------------------------------------------------------------------ sweeps

_SPACE_VALUES = ("[96, 128]", "[]", "[96, 96]", "[-1]", "[1.5]", '["96"]', "[true]", "96", '"seq"',
                 "{start = 1, stop = 5}", "{start = 5, stop = 1}", "{start = 1, stop = 9, step = 0}",
                 f"{{start = 0, stop = {2 ** 63 - 1}}}", "{start = 1}", "{start = 1, stop = 3, step = -1}",
                 "{start = 1, stop = 3, steps = 1}", "[" * 300 + "1" + "]" * 300, "{}", "[[96]]",
                 f"[{2 ** 63 - 1}]", "[0]", "[4097]", "[1, 2, 3, 4, 5, 6, 7, 8]")
_SPACE_KEYS = ("selections", "dims", "targets", "topologies", "families", "table", "extra", "")
_SPACE_LISTS = ('["p11_seq_variants.py:SeqPool"]', '["p11_seq_variants.py:SeqPool", "p01_rownorm_mesh.py"]',
                '["missing.py"]', '["llama3-8b:Llama3_8B.layer0"]', "[]", '[""]', "5", '["p11_seq_variants.py"]',
                '["p11_seq_variants.py:SeqPool", "p11_seq_variants.py:SeqPool"]', '["nope-model"]')


_SPACE_OTHER = {
    "targets": ('["nvidia.h200_sxm"]', '["nope"]', "[]", "[5]", '"x"', '["nvidia.h100_sxm", "nvidia.h100_sxm"]'),
    "topologies": ('["cta"]', '["nope"]', '["cta", "thread"]', "[]"),
    "families": ('["memory"]', '"all"', '["nope"]', "[]", "5", '["estimate"]'),
    "table": ('"t.csv"', '"t.txt"', "5", '"../t.csv"', '""', '"t.parquet"'),
}


def _space_text(rng: random.Random) -> str:
    chosen = rng.choice(_SPACE_LISTS) if rng.random() < 0.4 else _SPACE_LISTS[rng.choice((0, 1))]
    lines = [f"selections = {chosen}"]
    for key, values in _SPACE_OTHER.items():
        if rng.random() < 0.3:
            lines.append(f"{key} = {rng.choice(values)}")
    if rng.random() < 0.2:
        lines.append(f"{rng.choice(_SPACE_KEYS)} = 1")
    if rng.random() < 0.8:
        lines.append("[dims]")
        for _ in range(rng.choice((1, 1, 2))):
            name = rng.choice(("seq", "seq", "nope", "status", "1x", "s\u00e9q", "ctx_len"))
            lines.append(f"{name} = {rng.choice(_SPACE_VALUES)}")
    text = "\n".join(lines) + "\n"
    return base.mutate_text(text, rng) if rng.random() < 0.2 else text


def _damaged_table(work: Path, rng: random.Random) -> str:
    """A sweep table (as `sweep` writes it) with one damage, or another file; its name."""
    header = "selection,target,topology,seq,status,predicted-ns,bound-by,flops.f32"
    rows = ["p11_seq_variants.py:SeqPool,,,96,ok,1200,memory,9216", "p11_seq_variants.py:SeqPool,,,128,ok,1300,memory,12288"]
    way = rng.choice(("none", "cell", "header", "row", "bytes", "huge", "empty"))
    if way == "cell":
        row = rows[0].split(",")
        row[rng.randrange(len(row))] = rng.choice(("1.5", "", "x", "-1", str(2 ** 64), '"a,b"', "\0", "1_0"))
        rows[0] = ",".join(row)
    elif way == "header":
        header = rng.choice(("selection,target", "a,b,c,status", header + ",extra", header + ",flops.f32",
                             "selection,target,topology,se q,status", ""))
    elif way == "row":
        rows.append(rng.choice(("x", ",,,,", "p,,,1,ok,1,2,3,4,5")))
    elif way == "huge":
        rows[0] = rows[0].replace("memory", "m" * 140_000)
    text = header + "\n" + "\n".join(rows) + "\n" if way != "empty" else ""
    data = text.encode("utf-8")
    if way == "bytes":
        data = data[:20] + bytes([rng.randrange(128, 256)]) + data[20:]
    name = rng.choice(("t.csv", "t.csv", "t.parquet", "p.parquet"))
    if name == "p.parquet":  # a real Parquet table, bytes changed or cut
        data = _parquet_bytes(work, rng)
    (work / name).write_bytes(data)
    return name


def _parquet_bytes(work: Path, rng: random.Random) -> bytes:
    from tilefoundry.sweep.table import Table, write_table

    columns = ["selection", "target", "topology", "seq", "status", "predicted-ns", "bound-by"]
    rows = [{"selection": "s", "target": None, "topology": None, "seq": 96 + k, "status": "ok",
             "predicted-ns": 100 + k, "bound-by": "memory"} for k in range(rng.randint(0, 5))]
    write_table(str(work / "whole.parquet"), Table(columns, rows))
    data = bytearray((work / "whole.parquet").read_bytes())
    for _ in range(rng.randint(1, 6)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data[: rng.randrange(len(data))] if rng.random() < 0.2 else data)


def sweep_case(seed: int, work: Path) -> base.Case:
    rng = random.Random(seed)
    for name in ("p11_seq_variants.py", "p01_rownorm_mesh.py"):
        shutil.copy(base.PROGRAMS / name, work / name)
    if rng.random() < 0.3:
        return base.Case(["sweep", "--report", _damaged_table(work, rng)] + (["--json"] if rng.random() < 0.5 else []))
    (work / "space.toml").write_text(_space_text(rng), encoding="utf-8", errors="surrogateescape")
    argv = ["sweep", "--dry-run", "space.toml", "-o", rng.choice(("out.csv", "out.parquet", "out.txt", "."))]
    if rng.random() < 0.2:
        argv += ["--jobs", rng.choice(("1", "0", "-1", "x", str(2 ** 63)))]
    return base.Case(argv)


CAMPAIGNS["sweep"] = sweep_case
