# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The release server of the installer's tests (test_release, test_plugin_sets)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import release_server

RELEASE_ARCH = "amd64"
RELEASE_V1, RELEASE_V2 = "1.1.1", "1.1.2"  # 1.1.2 has no sbr
STAND_IN_FLANNEL_VERSIONS = ("v1.9.1-flannel1", "v1.9.2-flannel1")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Releases 1.1.1 and 1.1.2 built from the distro's binaries (each version's binaries differ),
    and releases in flannel's layout around the flannel stand-in (not flannel), on 127.0.0.1."""
    root = tmp_path_factory.mktemp("release")
    plugins = sorted(os.listdir(release_server.PLUGIN_SOURCE))
    release_server.build_release(str(root), RELEASE_V1, RELEASE_ARCH, patch={n: b"v1" for n in plugins})
    v2_plugins = [n for n in plugins if n != "sbr"]
    release_server.build_release(str(root), RELEASE_V2, RELEASE_ARCH, v2_plugins, patch={n: b"v2" for n in v2_plugins})
    flannel = {version: Path(release_server.build_stand_in_flannel(str(root), version, RELEASE_ARCH))
               for version in STAND_IN_FLANNEL_VERSIONS}
    httpd, base_url = release_server.start_server(str(root))
    yield {"root": root, "base_url": base_url, "flannel": flannel}
    httpd.shutdown()
