# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures for functional tests against the real plugin binaries: network namespaces and
bridges named with the ``cnit-e-`` prefix, removed (with portmap's global chains) even when a
test fails, and ``net.ipv4.ip_forward`` restored to the value it had before."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import hostclean
import pytest

PREFIX = "cnit-e-"
IP_FORWARD = "/proc/sys/net/ipv4/ip_forward"
_counter = itertools.count(1)


def _ip_netns(*argv: str, check: bool = True) -> None:
    subprocess.run(["ip", "netns", *argv], capture_output=True, check=check)


@pytest.fixture(autouse=True)
def host_guard():
    """Clean up everything with the prefix and restore ip_forward, whatever the test did."""
    forward = Path(IP_FORWARD).read_text().strip()
    try:
        yield
    finally:
        hostclean.clean(PREFIX, ip_forward=forward)


@pytest.fixture
def make_netns():
    """Create ``cnit-e-<n>`` namespaces; returns their path."""
    created = []

    def make() -> str:
        name = f"{PREFIX}{next(_counter)}"
        _ip_netns("add", name)
        created.append(name)
        return f"/var/run/netns/{name}"

    yield make
    for name in created:
        _ip_netns("del", name, check=False)


@pytest.fixture
def bridge_name():
    """A fresh bridge name (the bridge plugin creates it; host_guard removes it)."""
    return f"{PREFIX}br{next(_counter)}"


@pytest.fixture
def subnet():
    """A /24 of its own within 10.250.0.0/16."""
    return f"10.250.{100 + next(_counter) % 150}.0/24"
