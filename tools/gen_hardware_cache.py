"""Write src/tilefoundry/target/hardware/parsed.json: every shipped hardware
document's TOML tables, with the exact text each was parsed from
(``tilefoundry.target.documents``: a file whose text is the one kept there is
read from it, any other is parsed with tomllib, so an edited document is never
read stale; the kept parse only spares every run tomllib's import and parse).

    python tools/gen_hardware_cache.py           # rewrite parsed.json
    python tools/gen_hardware_cache.py --check   # exit 1 when it is stale

tests/target/test_target_documents_kept.py regenerates it in memory and compares.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tilefoundry.target.documents import _PARSED_FILE, hardware_dir, kept_parses_text  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is stale")
    opts = parser.parse_args()
    path = hardware_dir() / _PARSED_FILE
    text = kept_parses_text()
    if opts.check:
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            print(f"{path.relative_to(ROOT)} is stale: run python tools/gen_hardware_cache.py")
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
