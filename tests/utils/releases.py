# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The plugin release and the libcni releases the real-binary suites run against, in one place.

scripts/test.sh runs the release-dependent suites once per plugin release, naming it in
CNIKIT_TEST_PLUGIN_RELEASE; unset, the suites run Debian 12's own binaries in /usr/lib/cni.
scripts/lib.sh (ensure_releases) describes each release in .build/releases/plugins-<release>.json
and the libcni tools it built in .build/releases/libcni.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

RELEASES = Path(__file__).resolve().parents[2] / ".build" / "releases"
ENVIRONMENT = "CNIKIT_TEST_PLUGIN_RELEASE"
DEBIAN_PLUGINS = "/usr/lib/cni"


def _described(release: str) -> dict:
    path = RELEASES / f"plugins-{release}.json"
    if not path.exists():
        raise RuntimeError(f"{ENVIRONMENT}={release}: {path} is missing; run ./scripts/test.sh setup")
    return json.loads(path.read_text())


def _plugins() -> tuple:
    release = os.environ.get(ENVIRONMENT)
    if release:
        described = _described(release)
        return described["cnit_plugin_release"], described["cnit_plugin_dir"]
    for path in RELEASES.glob("plugins-*.json"):
        described = json.loads(path.read_text())
        if described["cnit_plugin_dir"] == DEBIAN_PLUGINS:
            return described["cnit_plugin_release"], DEBIAN_PLUGINS
    raise RuntimeError(f"{RELEASES} describes no plugin release; run ./scripts/test.sh setup")


# The release of this run and its directory.
PLUGIN_RELEASE, PLUGIN_DIR = _plugins()


def _version(text: str) -> tuple:
    return tuple(int(part) for part in text.split("."))


def plugins_at_least(release: str) -> bool:
    """True when this run's plugins are ``release`` or newer."""
    return _version(PLUGIN_RELEASE) >= _version(release)


def libcni_tools() -> dict:
    """``libcni release -> the libcni tool built against it``, oldest first."""
    path = RELEASES / "libcni.json"
    if not path.exists():
        raise RuntimeError(f"{path} is missing; run ./scripts/test.sh setup")
    return dict(sorted(json.loads(path.read_text()).items(), key=lambda item: _version(item[0])))


def plugin_dirs() -> dict:
    """``plugin release -> its directory`` of every release setup prepared, oldest first."""
    described = (json.loads(path.read_text()) for path in RELEASES.glob("plugins-*.json"))
    pairs = ((d["cnit_plugin_release"], d["cnit_plugin_dir"]) for d in described)
    return dict(sorted(pairs, key=lambda pair: _version(pair[0])))
