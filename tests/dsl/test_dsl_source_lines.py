"""An @func's source is read from one parse of its file (parser._source_lines):
it must answer exactly what inspect.getsourcelines answers, or defer to it."""
from __future__ import annotations

import importlib.util
import inspect
import textwrap

from tilefoundry.dsl import parser

SOURCE = textwrap.dedent('''
    import functools

    def plain(x):
        return x

    @functools.lru_cache(maxsize=None)
    @functools.wraps(plain)
    def decorated(x):
        # a trailing comment in the body
        return x

    class Holder:
        def method(self):
            def nested():
                return 1
            return nested

        @staticmethod
        def static(
            a,
            b,
        ):
            return a + b

    def f(): return 1
''')


def _load(tmp_path):
    path = tmp_path / "defs.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("defs_for_source_lines", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_source_lines_agree_with_inspect(tmp_path):
    module = _load(tmp_path)
    functions = [module.plain, module.decorated.__wrapped__, module.Holder.method,
                 module.Holder().method(), module.Holder.static, module.f]
    for fn in functions:
        assert parser._source_lines(fn) == inspect.getsourcelines(fn), fn.__qualname__


def test_a_def_the_parse_cannot_place_is_asked_of_inspect(tmp_path, monkeypatch):
    module = _load(tmp_path)
    asked = []
    monkeypatch.setattr(parser, "_def_spans", lambda filename, lines: {})
    real = inspect.getsourcelines
    monkeypatch.setattr(parser.inspect, "getsourcelines",
                        lambda fn: asked.append(fn) or real(fn))
    assert parser._source_lines(module.plain) == real(module.plain)
    assert asked == [module.plain]


def test_the_loader_hands_its_parse_to_the_func_parser(tmp_path, monkeypatch):
    """A model file is parsed once whole: reading its @funcs' sources does not
    parse the file again (each function's own text is still parsed)."""
    from tilefoundry.dsl.loader import load_module_file

    text = textwrap.dedent('''
        from tilefoundry import func
        from tilefoundry.dsl import Tensor

        @func
        def double(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
            return x + x
    ''')
    path = tmp_path / "kernel.py"
    path.write_text(text)
    whole = []
    real = parser.ast.parse
    monkeypatch.setattr(parser.ast, "parse",
                        lambda source, *a, **k: (whole.append(1) if source == text else None)
                        or real(source, *a, **k))
    module = load_module_file(str(path))
    assert module.double.name == "double"
    assert len(whole) == 1  # the loader's own parse
