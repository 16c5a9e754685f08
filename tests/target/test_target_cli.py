"""companions.md §6.9: `tilefoundry target list` and `tilefoundry target show ID`."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest


def run(*args):
    return subprocess.run([sys.executable, "-m", "tilefoundry", "target", *args],
                          capture_output=True, text=True)


def test_target_6_9_list():
    out = run("list")
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    lines = out.stdout.splitlines()
    assert lines[:2] == ["Available targets:", ""]
    rows = lines[2:7]
    assert [r.split()[0] for r in rows] == [
        'AmxTarget("apple.m2_pro")', "CpuTarget()", 'CudaTarget("nvidia.b200_sxm")',
        'CudaTarget("nvidia.h100_sxm")', 'CudaTarget("nvidia.h200_sxm")']
    assert [r.split("identity: ")[1] for r in rows] == [
        "apple.m2_pro", "cpu", "nvidia.b200_sxm", "nvidia.h100_sxm", "nvidia.h200_sxm"]
    assert len({r.index("identity:") for r in rows}) == 1  # padded constructors
    assert all(r.startswith("  ") for r in rows)
    assert "from tilefoundry.target import AmxTarget, CpuTarget, CudaTarget, MultiCoreTarget" in lines
    assert any("target show" in line for line in lines[7:])


def test_target_6_9_show_h200_every_number_has_its_source():
    out = run("show", "nvidia.h200_sxm")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == 'target: CudaTarget("nvidia.h200_sxm")'
    assert "architecture: nvidia.sm90" in lines
    assert "device: nvidia.h200_sxm" in lines
    digests = [line for line in lines if line.startswith("  digest: ")]
    assert len(digests) == 2 and all(re.fullmatch(r"  digest: [0-9a-f]{64}", d) for d in digests)
    facts = lines[lines.index("facts:") + 1:]
    leaves = [i for i, line in enumerate(facts) if re.match(r"  \S", line)]
    assert len(leaves) > 20
    for i in leaves:
        line = facts[i]
        end = leaves[leaves.index(i) + 1] if leaves.index(i) + 1 < len(leaves) else len(facts)
        block = facts[i + 1:end]
        if line.endswith(": unavailable"):
            assert block[0].startswith("    conditions: "), line
            continue
        assert re.search(r" \[(vendor|measured|reference|derived|estimated)\]$", line), line
        assert block[0].startswith("    conditions: "), line
        assert block[-1].startswith("    source: "), line
        if line.endswith("[derived]"):
            assert any(b.startswith("    derivation: ") for b in block), line
    assert "  compute.sm_count: 132 sm [vendor]" in facts
    assert "  throughput.bf16: 989500000000000 flop/s [derived]" in facts
    assert "  service.integer: 126893939394 op/s per cta [derived]" in facts
    assert "  throughput.f4e2m1: unavailable" in facts
    assert "  instruction.compute_dtypes: ['f32', 'f16', 'bf16', 'fp8e4m3'] dtype [vendor]" in facts


def test_target_6_9_show_lists_architecture_then_device_each_sorted():
    out = run("show", "nvidia.b200_sxm")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    facts = lines[lines.index("facts:") + 1:]
    paths = [re.match(r"  (\S+):", line).group(1) for line in facts if re.match(r"  \S", line)]
    # the device's leaves start where the order starts over; each run is sorted
    split = next(k for k in range(1, len(paths)) if paths[k] < paths[k - 1])
    arch, dev = paths[:split], paths[split:]
    assert arch == sorted(arch) and dev == sorted(dev)
    assert "memory.tensor.per_cta" in arch and "memory.hbm.bus_width" in dev


def test_target_6_9_show_amx_geometry():
    out = run("show", "apple.m2_pro")
    assert out.returncode == 0, out.stderr
    assert "  geometry.f32_accumulator_tile: 32x32 element [derived]" in out.stdout
    assert "  compute.amx_unit_count: 2 amx unit [estimated]" in out.stdout
    assert "architecture: apple.amx" in out.stdout


def test_target_6_9_show_cpu():
    out = run("show", "cpu")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["target: CpuTarget()", "identity: cpu", "facts: unavailable"]


def test_target_6_9_show_unknown_id_lists_available_ids():
    out = run("show", "nvidia.a100")
    assert out.returncode == 1
    assert out.stdout == ""
    assert out.stderr == ("tilefoundry: error: unknown target 'nvidia.a100'; available: "
                          "apple.m2_pro, cpu, ibm.spyre_32core, nvidia.b200_sxm, nvidia.h100_sxm, "
                          "nvidia.h200_sxm\n")


@pytest.mark.parametrize("args,code", [((), 2), (("show",), 2)])
def test_target_6_9_usage_errors(args, code):
    out = run(*args)
    assert out.returncode == code
    assert out.stdout == ""
    assert out.stderr.strip()


def test_target_an_unknown_id_that_prefixes_one_target_is_suggested():
    out = run("show", "nvidia.b200")
    assert out.returncode == 1
    assert out.stderr.startswith("tilefoundry: error: unknown target 'nvidia.b200'; "
                                 "did you mean 'nvidia.b200_sxm'? available: ")
