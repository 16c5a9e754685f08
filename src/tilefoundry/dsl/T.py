"""The TIR namespace (authoring.md §1.1). No program uses it; it exists so that
``from tilefoundry.dsl import *`` binds ``T``. Its names are not supported."""


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"tilefoundry.dsl.T.{name}: the TIR namespace is not supported")
