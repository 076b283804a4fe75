"""``make bench``: run every benchmark module and collect their result files.

Each ``benchmarks/bench_*.py`` module exposes ``main() -> dict`` that measures side by side in one
run (ratios are stable on a shared machine, absolute times are not) and writes its own
``benchmarks/results/<name>.json``. Benchmarks run one after another so they do not share cores.
A failing benchmark is reported and the others still run; the exit code says whether all passed.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
import traceback
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> int:
    only = set(argv if argv is not None else sys.argv[1:])
    names = sorted(
        m.name
        for m in pkgutil.iter_modules([str(Path(__file__).parent)])
        if m.name.startswith("bench_") and (not only or m.name in only)
    )
    failed = []
    for name in names:
        started = time.perf_counter()
        print(f"== {name}", flush=True)
        try:
            importlib.import_module(f"benchmarks.{name}").main()
        except Exception:
            traceback.print_exc()
            failed.append(name)
        print(f"== {name} done in {time.perf_counter() - started:.0f} s", flush=True)
    print(f"results in {RESULTS_DIR}; failed: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
