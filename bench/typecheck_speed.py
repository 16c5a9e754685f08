"""Issue 2/3 speed targets: import time, in-process type-check time of the
largest golden program, and the whole `tilefoundry analyze` process.

Prints the figures; never asserts. Run: python bench/typecheck_speed.py
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from _programs import largest_program  # noqa: E402


def best_of(runs: int, fn) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def process_seconds(args: list[str]) -> float:
    return best_of(5, lambda: subprocess.run(args, check=True, stdout=subprocess.DEVNULL))


def main() -> None:
    source, selector, dims = largest_program()
    baseline = process_seconds([sys.executable, "-c", "pass"])
    imported = process_seconds([sys.executable, "-c", "import tilefoundry"])
    print(f"python startup alone           : {baseline:.3f} s")
    print(f"python -c 'import tilefoundry' : {imported:.3f} s  (target <= 0.3 s)")

    from tilefoundry.cli.analyze_cmd import typed_program
    from tilefoundry.dsl.loader import load_selection
    import tilefoundry.ops  # noqa: F401  (registries; counted as import, not type-check)

    def typecheck():
        module, function = load_selection(f"{source}:{selector}")
        typed_program(module, function, dims or None)

    typecheck()  # warm the file system cache
    print(f"type-check {source.name}:{selector} after import: {best_of(5, typecheck):.3f} s (target <= 0.2 s)")
    command = [sys.executable, "-m", "tilefoundry", "analyze", f"{source}:{selector}"]
    print(f"whole process `tilefoundry analyze`: {process_seconds(command):.3f} s (target <= 0.5 s)")

    # One LLM decoder layer (the reference needs about 5 s; we aim at 20x faster).
    layer = os.path.join(os.path.dirname(__file__), "programs", "decoder_layer.py")

    def typecheck_layer():
        module, function = load_selection(f"{layer}:DecoderStack.layer0")
        typed_program(module, function, {"seq": 4096})

    typecheck_layer()
    print(f"type-check one decoder layer after import: {best_of(5, typecheck_layer):.3f} s")
    command = [sys.executable, "-m", "tilefoundry", "analyze", "--dim", "seq=4096",
               f"{layer}:DecoderStack.layer0"]
    print(f"whole process, one decoder layer: {process_seconds(command):.3f} s (target <= 0.25 s = 5 s / 20)")


if __name__ == "__main__":
    main()
