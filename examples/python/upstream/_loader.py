"""Import single upstream MoE kernel modules without the serving stack around them.

The upstream packages (sglang, flashinfer-python) are installed at run time with
`pip install --no-deps`; nothing of them lives in this repository. Their kernel modules sit
inside packages whose `__init__.py` files pull in the whole server (ZMQ, OpenAI client,
transformers model configs, NCCL groups, ...). This module imports only the kernel files:

* `bare_package(name)` registers a package WITHOUT running its `__init__.py`, so that a
  submodule (e.g. `sglang.srt.layers.moe.topk`) can be imported on its own;
* `inert_module(name, **attrs)` registers a stand-in for a serving-stack module that a kernel
  file imports at module level but whose objects the kernel functions we call never use. Every
  object taken from it is an `_Inert`: calling it, testing its truth value or iterating it raises
  `UpstreamStubUsed`, so a code path that reaches the serving stack fails loudly and is never
  silently computed by a stand-in.

Upstream code is never modified and never copied; stand-ins are registered only for modules
that are absent (a real installed module always wins).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types


class UpstreamStubUsed(RuntimeError):
    """An upstream kernel path used a serving-stack object that the adapter left out."""


class _Inert:
    """Placeholder for an object of a serving-stack module the adapter does not load."""

    def __init__(self, qualname: str):
        object.__setattr__(self, "_qualname", qualname)

    def _fail(self, what: str):
        raise UpstreamStubUsed(
            f"{what} of '{self._qualname}': the upstream kernel reached sglang's serving stack, "
            "which the moefuzz adapter does not load (examples/python/upstream/_loader.py)"
        )

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Inert(f"{self._qualname}.{name}")

    def __call__(self, *args, **kwargs):
        self._fail("call")

    def __bool__(self):
        self._fail("truth value")

    def __iter__(self):
        self._fail("iteration")

    def __mro_entries__(self, bases):
        # `class X(StubBase)` at import time: the class exists, its base is plain object.
        return (object,)

    def __repr__(self):
        return f"<moefuzz inert stand-in for {self._qualname}>"


class _InertModule(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Inert(f"{self.__name__}.{name}")


def _absent(name: str) -> bool:
    if name in sys.modules:
        return False
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


def require(distribution: str, module: str, pip_name: str) -> None:
    """Raise ImportError with an install hint when an upstream package is not installed."""
    if importlib.util.find_spec(module) is None:
        raise ImportError(
            f"upstream package '{distribution}' is not installed (module '{module}' not found); "
            f"install it with: python3 -m pip install --no-deps {pip_name} "
            "(examples/python/upstream/__init__.py lists the wheels)"
        )


def bare_package(name: str) -> types.ModuleType:
    """Register package `name` without executing its __init__.py (submodules import normally)."""
    existing = sys.modules.get(name)
    if existing is not None:
        return existing
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError(f"'{name}' is not an installed package")
    module = types.ModuleType(name)
    module.__path__ = list(spec.submodule_search_locations)
    module.__spec__ = spec
    module.__file__ = spec.origin
    module.__package__ = name
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent and parent in sys.modules:
        setattr(sys.modules[parent], child, module)
    return module


def inert_module(name: str, force: bool = False, **attrs) -> types.ModuleType:
    """Register an inert stand-in for module `name` (only if it is absent, unless force).

    `attrs` are real values the kernel file needs at import time (documented where used).
    `force` replaces an installed serving-stack module whose import would drag the server in;
    it is used only for sglang-internal infrastructure, never for a module that computes.
    """
    if not force and not _absent(name):
        return importlib.import_module(name)
    module = _InertModule(name)
    module.__path__ = []
    module.__moefuzz_inert__ = True
    for key, value in attrs.items():
        setattr(module, key, value)
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent and parent in sys.modules:
        try:
            setattr(sys.modules[parent], child, module)
        except AttributeError:
            pass
    return module


def version_of(distribution: str) -> str:
    try:
        from importlib.metadata import version

        return version(distribution)
    except Exception:  # noqa: BLE001 - metadata is informative only
        return "unknown"
