"""Issue 40 item 9: the README names every runtime dependency the installed
distribution requires (what `pip show tilefoundry` lists as Requires)."""
from __future__ import annotations

import re
from importlib.metadata import requires

from tests.conftest import REPO


def _runtime_requirements() -> list[str]:
    names = []
    for requirement in requires("tilefoundry") or []:
        if "extra ==" in requirement:
            continue  # an optional extra ([test], [plots], [cluster], [torch])
        names.append(re.match(r"[A-Za-z0-9_.\-]+", requirement).group(0))
    return names


def test_item9_readme_names_every_runtime_dependency():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    paragraph = readme[readme.index("Runtime dependencies"):].split("\n\n")[0]
    names = _runtime_requirements()
    assert names, "the installed distribution states no requirement"
    missing = [name for name in names if f"`{name}`" not in paragraph]
    assert missing == [], f"README's dependency paragraph does not name {missing}"
    assert f"the {['', 'one', 'two', 'three', 'four', 'five', 'six', 'seven'][len(names)]} " in paragraph
