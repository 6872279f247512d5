# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""cni_plugin_install's task: run, installing with ``_install``. Its options are ``_install``'s
ARGUMENT_SPEC, exported here, which the installer's ``Options`` are built from."""

from __future__ import annotations

import platform

from ._download import Limits, url_password
from ._install import ARGUMENT_SPEC, Options, ensure

__all__ = ("ARGUMENT_SPEC", "run")


def run(host, params: dict, result: dict) -> None:
    """cni_plugin_install's task: ``params`` as ARGUMENT_SPEC parsed them, ``host`` the module's
    ``_ansible_glue.ModuleHost`` (downloads go through its fetch_url). The options fetch_url reads
    itself (validate_certs, use_proxy, url_username, ...) reach it through the module."""
    # A password inside a URL option never reaches the output (the URLs themselves are masked).
    checksum_url = (params["checksum"] or "").partition(":")[2]
    for url in (params["base_url"], params["url"], checksum_url):
        secret = url_password(url or "")
        if secret:
            host.hide(secret)
    dest = params["dest"] or next(iter(params["cni_path"]), None)
    if not dest:
        host.fail("dest: no directory to install into: dest is not set and cni_path is empty")
    options = Options.from_params(params, dest, platform.machine())
    installed = ensure(options, lambda url: host.fetch(url, params["timeout"]), host.tmpdir, host.check_mode,
                       Limits(seconds=params["timeout"]))
    if not host.diff:
        installed.pop("diff")
    for warning in installed.pop("warnings"):
        host.warn(warning)
    result.update(installed)
