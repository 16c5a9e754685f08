"""Issue 22 items 6 and 13: `pack --plot` is bounded (TILEFOUNDRY_MAX_PLOT_BUFFERS,
checked before the search), refuses a value a drawing cannot place, and takes
a file name as text (a `$` is no mathtext)."""
from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from tilefoundry.cli.main import main  # noqa: E402


def _csv(path, rows):
    path.write_text("id,lower,upper,size\n" + "".join(f"b{i},{a},{b},{s}\n" for i, (a, b, s) in enumerate(rows)))
    return str(path)


def _run(capsys, *argv):
    code = main(list(argv))
    return code, capsys.readouterr()


def test_plot_limit_is_checked_before_the_search(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TILEFOUNDRY_MAX_PLOT_BUFFERS", "10")
    source = _csv(tmp_path / "b.csv", [(i, i + 2, 1) for i in range(11)])
    code, (out, err) = _run(capsys, "pack", source, "--capacity", "100", "--plot", str(tmp_path / "p.svg"))
    assert code == 1 and out == ""
    assert err.strip() == ("tilefoundry: error: pack --plot: 11 buffers to draw (limit 10 buffers in one "
                           "plot); raise the limit with TILEFOUNDRY_MAX_PLOT_BUFFERS=N if this input is meant")
    assert not (tmp_path / "p.svg").exists()


def test_every_buffer_is_drawn(tmp_path, capsys):
    source = _csv(tmp_path / "b.csv", [(i, i + 3, 1 + i % 5) for i in range(300)])
    plot = tmp_path / "p.svg"
    code, _ = _run(capsys, "pack", source, "--capacity", "10000", "--plot", str(plot))
    assert code == 0
    text = plot.read_text()
    # one path per buffer in the collection, plus the axes' own
    assert text.count("<path") >= 300


def test_a_value_past_float_range_is_refused_for_the_plot_only(tmp_path, capsys):
    huge = 10**400
    source = _csv(tmp_path / "b.csv", [(0, 2, huge)])
    code, (_, err) = _run(capsys, "pack", source, "--capacity", str(2 * huge), "--plot", str(tmp_path / "p.svg"))
    assert code == 1 and "past the range a drawing can place" in err and len(err.strip().splitlines()) == 1
    code, (out, _) = _run(capsys, "pack", source, "--capacity", str(2 * huge))
    assert code == 0 and "optimal" in out


def test_a_dollar_in_the_file_name_is_text(tmp_path, capsys):
    source = _csv(tmp_path / "a$x^2$.csv", [(0, 2, 4), (1, 3, 4)])
    code, (_, err) = _run(capsys, "pack", source, "--capacity", "8", "--plot", str(tmp_path / "p.svg"))
    assert (code, err) == (0, "")
    assert "a$x^2$.csv" in (tmp_path / "p.svg").read_text()
