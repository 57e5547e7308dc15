"""`mypy --strict` over the package and the examples, so `pytest` alone covers the typing promise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parent.parent


def test_mypy_strict() -> None:
    try:
        import mypy  # noqa: F401
    except ImportError:  # pragma: no cover
        pytest.fail("mypy is not installed: pip install -e 'clients/python[test]'")
    targets = ["src", "examples/order-intake/intake.py", "examples/order-intake/receiver.py"]
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--python-version", "3.10", *targets],
        cwd=KIT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
