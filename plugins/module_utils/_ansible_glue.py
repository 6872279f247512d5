# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The only module_utils that knows Ansible: shared argument-spec pieces and the translation
of the collection's errors into fail_json."""

from __future__ import annotations

from ._errors import CNIError
from ._exec import DEFAULT_TIMEOUT

DEFAULT_CNI_PATH = ["/opt/cni/bin"]
DEFAULT_CONF_DIR = "/etc/cni/net.d"
DEFAULT_CACHE_DIR = "/var/lib/cni"


def paths_argument_spec() -> dict:
    """The options every module of the collection takes, so that ``module_defaults`` for
    ``group/cnikit.cni.cni`` can set them once (a module given an option it does not take fails)."""
    return {
        "cni_path": {"type": "list", "elements": "path", "default": list(DEFAULT_CNI_PATH)},
        "conf_dir": {"type": "path", "default": DEFAULT_CONF_DIR},
        "cache_dir": {"type": "path", "default": DEFAULT_CACHE_DIR},
        "timeout": {"type": "float", "default": DEFAULT_TIMEOUT},
    }


def fail_from_error(module, error: CNIError, **result) -> None:
    """fail_json with the error's message and its structured fields under ``error``."""
    details = error.to_dict()
    module.fail_json(msg=details.pop("msg"), error=details, **result)
