"""Fixtures of the authoring front-end tests (helpers live in dsl_helpers.py)."""
from tests.dsl.dsl_helpers import program  # noqa: F401 -- the fixture
