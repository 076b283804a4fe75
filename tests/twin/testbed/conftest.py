"""A live gateway subprocess on loopback, shared by the testbed tests of one module."""

from __future__ import annotations

import pytest

from twin.testbed.campaign import gateway_process


@pytest.fixture(scope="module")
def gateway():
    """(process, port) of a running gateway; SIGTERMed and checked at teardown."""
    with gateway_process() as (proc, port):
        yield proc, port
    assert proc.returncode == 0, f"gateway exited with {proc.returncode}"
