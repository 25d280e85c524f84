"""One loader for every parity-case package: each module of the package declares `CASES`."""

import importlib
import pkgutil


def gather_cases(package: str, path, kind: str) -> dict:
    """The `CASES` of every module of `package` (at `path`) merged and sorted by case id; a case
    id two modules define is an error naming it (`kind`: "seq2seq parity case", ...)."""
    cases: dict = {}
    for info in pkgutil.iter_modules(path):
        module = importlib.import_module(f"{package}.{info.name}")
        for name, case in module.CASES.items():
            if name in cases:
                raise RuntimeError(f"{kind} {name!r} is defined twice")
            cases[name] = case
    return dict(sorted(cases.items()))
