# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""cni_vxlan's task: its options (ARGUMENT_SPEC) and run, reconciling the device with ``_vxlan``."""

from __future__ import annotations

from ._argspec import ArgumentSpec
from ._defaults import DEFAULT_VXLAN_DEVICE, DEFAULT_VXLAN_PORT, DEFAULT_VXLAN_VNI
from ._vxlan import apply, describe, make_plan, parse_options, read_state

PEER_OPTIONS = {
    "name": {"type": "str"},
    "vtep": {"type": "str", "required": True},
    "mac": {"type": "str", "required": True},
    "underlay": {"type": "str", "required": True},
}

ARGUMENT_SPEC = ArgumentSpec({
    "name": {"type": "str", "default": DEFAULT_VXLAN_DEVICE},
    "vni": {"type": "int", "default": DEFAULT_VXLAN_VNI},
    "port": {"type": "int", "default": DEFAULT_VXLAN_PORT},
    "local": {"type": "str"},
    "dev": {"type": "str"},
    "vtep": {"type": "str"},
    "mac": {"type": "str"},
    "peers": {"type": "list", "elements": "dict", "options": PEER_OPTIONS, "default": []},
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
}, required_if=(("state", "present", ("local", "dev", "vtep", "mac")),))


def run(host, params: dict, result: dict) -> None:
    """``host`` is the module's ``_ansible_glue.ModuleHost``."""
    result.update({"changed": False, "changes": [], "device": None})
    options = parse_options(params)
    current = read_state(host, options.name)
    steps = make_plan(options.desired, current, options.peer_names)
    result.update({"changed": bool(steps), "changes": [step.text for step in steps],
                   "device": describe(options.desired if steps else current)})
    if host.diff:
        header = f"VXLAN device {options.name}"
        result["diff"] = {"before": current.lines(),
                          "after": options.desired.lines() if options.desired is not None else "",
                          "before_header": header, "after_header": header}
    if steps and not host.check_mode:
        apply(host, steps)
