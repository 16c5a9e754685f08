"""Tokens of the `ktdp` textual syntax (shared/intertile/syntax.md).

Every token keeps its line and column so that each refusal can name
``file:line:col``; that is the whole reason this is not a regex split.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass

from tilefoundry.errors import VerifyError
from tilefoundry.text_input import LINE_BREAK, IntegerTextError, read_integer


class TextError(VerifyError):
    """Malformed KTIR text: one line naming file:line:col, what, and the fix."""


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    line: int
    col: int
    start: int = 0
    end: int = 0


# Order matters: longer punctuation first, shapes before integers. Digits are
# ASCII only (\d would take other scripts' digits, which int() reads too); a
# comment ends at the line's end, whichever of \n, \r\n, \r ends it.
_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+|//[^\r\n]*)
  | (?P<shape>[0-9]+(?:x[0-9]+)*x[A-Za-z_][A-Za-z0-9_]*)
  | (?P<float>[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?)
  | (?P<int>[0-9]+)
  | (?P<ssa>%[A-Za-z0-9_$.]+(?:\#\d+)?)
  | (?P<alias>\#[A-Za-z_][A-Za-z0-9_$.]*)
  | (?P<bang>![A-Za-z_][A-Za-z0-9_.]*)
  | (?P<sym>@[A-Za-z_][A-Za-z0-9_$.]*)
  | (?P<bb>\^[A-Za-z0-9_]+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_$.]*)
  | (?P<punct>->|>=|<=|==|[()\[\]{}<>,:=+\-*?])
    """,
    re.VERBOSE,
)


def tokenize(text: str, filename: str = "<text>") -> list[Token]:
    tokens: list[Token] = []
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            col = pos - line_start + 1
            raise TextError(
                f"{filename}:{line}:{col}: unexpected character {text[pos]!r}; "
                "remove it or check the syntax in shared/intertile/syntax.md")
        kind = m.lastgroup
        chunk = m.group()
        if kind != "ws":
            _check_digits(kind, chunk, filename, line, pos - line_start + 1)
            tokens.append(Token(kind, chunk, line, pos - line_start + 1, pos, m.end()))
        breaks = list(LINE_BREAK.finditer(chunk))
        if breaks:
            line += len(breaks)
            line_start = pos + breaks[-1].end()
        pos = m.end()
    tokens.append(Token("eof", "", line, pos - line_start + 1, pos, pos))
    return tokens


def _check_digits(kind: str, chunk: str, filename: str, line: int, col: int) -> None:
    """The one integer rule (text_input.read_integer): an integer, or an
    extent of a shape, has at most MAX_DIGITS digits."""
    if kind not in ("int", "shape"):
        return
    for run in re.findall(r"[0-9]+", chunk):
        try:
            read_integer(run, signed=False)
        except IntegerTextError as exc:  # the token's own pattern leaves only the digit count
            raise TextError(f"{filename}:{line}:{col}: an integer {exc}; write a smaller "
                            "number") from None


class TokenStream:
    """A cursor over tokens with the error helper every parser here uses."""

    def __init__(self, tokens: list[Token], filename: str, source: str = ""):
        self.tokens = tokens
        self.source = source
        self.pos = 0
        self.filename = filename
        self.depth = 0  # open nested constructs (see nest)

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def next(self) -> Token:
        tok = self.peek()
        self.pos += 1
        return tok

    def at(self, text: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok.text == text and tok.kind in ("punct", "ident")

    def accept(self, text: str) -> Token | None:
        if self.at(text):
            return self.next()
        return None

    def expect(self, text: str, what: str = "") -> Token:
        tok = self.peek()
        if not self.at(text):
            self.fail(tok, f"expected '{text}'{' ' + what if what else ''}, "
                           f"found {describe(tok)}")
        return self.next()

    def expect_kind(self, kind: str, what: str) -> Token:
        tok = self.peek()
        if tok.kind != kind:
            self.fail(tok, f"expected {what}, found {describe(tok)}")
        return self.next()

    @contextmanager
    def nest(self, tok: Token):
        """One level of a recursive construct opened at ``tok``: past the
        stated nesting limit it is refused, never a RecursionError."""
        from tilefoundry import limits

        self.depth += 1
        try:
            if self.depth > limits.limit("NESTING"):
                raise TextError(str(limits.over("NESTING", f"{self.where(tok)}: the expression nests too deeply")))
            yield
        finally:
            self.depth -= 1

    def where(self, tok: Token) -> str:
        return f"{self.filename}:{tok.line}:{tok.col}"

    def fail(self, tok: Token, message: str, remedy: str = "") -> None:
        tail = f"; {remedy}" if remedy else ""
        raise TextError(f"{self.where(tok)}: {message}{tail}")


def describe(tok: Token) -> str:
    return "end of file" if tok.kind == "eof" else repr(tok.text)
