# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Names, container IDs, interface names and netns names with '/', '..', NUL, whitespace or
over length are rejected, naming the option, before any filesystem, process or netlink call:
every such call is made to raise while the logic runs. The modules, run as Ansible runs them,
fail the same way and create nothing."""

from __future__ import annotations

import builtins
import contextlib
import fcntl
import os
import shutil
import socket
import subprocess

import modules
import pytest
from conftest import netns_names

from ansible_collections.cnikit.cni.plugins.module_utils import _cache, _netns, _install, _network_file
from ansible_collections.cnikit.cni.plugins.module_utils._conflist import NetworkList
from ansible_collections.cnikit.cni.plugins.module_utils._engine import Attachment, Engine
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError
from ansible_collections.cnikit.cni.plugins.module_utils._identifiers import AttachmentKey, netns_path, normalise_cni_args
from ansible_collections.cnikit.cni.plugins.module_utils._gc import valid_attachment_keys

BAD_NAMES = ["a/b", "../etc", "..", ".", "a\x00b", "a b", " lead", "trail\n", "\t", "x" * 256, "", "-dash",
             "a;reboot", "$(reboot)", "é"]
BAD_IFNAMES = ["eth/0", "..", ".", "eth\x00", "eth 0", "eth0\n", "x" * 16, "", "a:b", "eth\x1b", "eth\x7f",
               "\u0435th0", "eth\u200b0"]  # control characters; a Cyrillic e; a zero-width space
ENGINE = Engine(["/nonexistent/cni/bin"], "/nonexistent/cache")
NETNS = "/var/run/netns/cnit-r-never"


class Touched(AssertionError):
    """A filesystem, process or socket call was made before the input was rejected."""


@contextlib.contextmanager
def nothing_touched(monkeypatch):
    def refuse(name):
        def call(*args, **kwargs):
            raise Touched(f"{name} called with {args!r}")
        return call

    targets = [(builtins, "open"), (os, "open"), (os, "stat"), (os, "lstat"), (os, "listdir"), (os, "scandir"),
               (os, "makedirs"), (os, "mkdir"), (os, "unlink"), (os, "rename"), (os, "replace"), (os, "rmdir"),
               (os, "symlink"), (os, "chmod"), (os, "chown"), (os, "access"), (fcntl, "flock"), (socket, "socket"),
               (subprocess, "Popen"), (os, "fork"), (os, "execve"), (os, "system")]
    with monkeypatch.context() as patch:
        for module, name in targets:
            patch.setattr(module, name, refuse(f"{module.__name__}.{name}"))
        yield


def network(name="cnit-r-net"):
    # Built directly: the loader would reject some of these names itself, before the engine.
    return NetworkList(name=name, cni_version="1.0.0", plugins=[{"type": "bridge"}], raw={}, raw_bytes=b"{}")


def _enter(manager):
    with manager:
        pass


# (what, expected option path, call with the bad value)
NAME_CALLS = [
    ("Engine.add container_id", "container_id", lambda v: ENGINE.add(network(), Attachment("cnit-r-net", v, NETNS))),
    ("Engine.delete container_id", "container_id", lambda v: ENGINE.delete(network(), Attachment("cnit-r-net", v, NETNS))),
    ("Engine.check container_id", "container_id", lambda v: ENGINE.check(network(), Attachment("cnit-r-net", v, NETNS))),
    ("Engine.add network name", "network", lambda v: ENGINE.add(network(v), Attachment(v, "c1", NETNS))),
    ("Engine.delete network name", "network", lambda v: ENGINE.delete(network(v), Attachment(v, "c1", NETNS))),
    ("Engine.gc network name", "network", lambda v: ENGINE.gc(network(v), [])),
    ("cache write container_id", "container_id",
     lambda v: _cache.ResultCache("/nonexistent/cache").write(_cache.CacheEntry("n", v, "eth0"))),
    ("cache read network", "network", lambda v: _cache.ResultCache("/nonexistent/cache").read(AttachmentKey(v, "c1", "eth0"))),
    ("cache delete container_id", "container_id", lambda v: _cache.ResultCache("/nonexistent/cache").delete(AttachmentKey("n", v, "eth0"))),
    ("cache lock network", "network", lambda v: _enter(_cache.ResultCache("/nonexistent/cache").lock(AttachmentKey(v, "c1", "eth0")))),
    ("netns create", "netns", _netns.create),
    ("netns remove", "netns", _netns.remove),
    ("netns exists", "netns", _netns.exists),
    ("GC valid_attachments", "valid_attachments[0].container_id",
     lambda v: valid_attachment_keys([{"container_id": v}])),
]
IFNAME_CALLS = [
    ("Engine.add ifname", "ifname", lambda v: ENGINE.add(network(), Attachment("cnit-r-net", "c1", NETNS, v))),
    ("Engine.delete ifname", "ifname", lambda v: ENGINE.delete(network(), Attachment("cnit-r-net", "c1", NETNS, v))),
    ("cache read ifname", "ifname", lambda v: _cache.ResultCache("/nonexistent/cache").read(AttachmentKey("n", "c1", v))),
    ("GC valid_attachments ifname", "valid_attachments[0].ifname",
     lambda v: valid_attachment_keys([{"container_id": "c1", "ifname": v}])),
]
OTHER_CALLS = [
    ("netns name with NUL", "netns", "a\x00b", netns_path),
    ("relative netns path", "netns", "run/netns/x", netns_path),
    ("CNI_ARGS key with ';'", "args[0]", "K;X", lambda v: normalise_cni_args({v: "1"})),
    ("CNI_ARGS value with '='", "args[0]", "a=b", lambda v: normalise_cni_args([["K", v]])),
    ("CNI_ARGS value with NUL", "args[0]", "a\x00", lambda v: normalise_cni_args([["K", v]])),
    ("conflist filename with '/'", "filename", "../evil.conflist",
     lambda v: _network_file.conflist_path("/etc/cni/net.d", "n", filename=v)),
    ("conflist hidden filename", "filename", ".x.conflist",
     lambda v: _network_file.conflist_path("/etc/cni/net.d", "n", filename=v)),
    *[(f"conflist filename {v!r}", "filename", v, lambda v: _network_file.conflist_path("/etc/cni/net.d", "n", filename=v))
      for v in ("a\nb.conflist", "\u202eevil.conflist", " lead.conflist", "*.conflist", "-rf.conflist",
                "a\x00b.conflist", "x" * 247 + ".conflist")],
    ("plugin name with '/'", "plugins", "../../bin/sh", lambda v: _install._check_plugins((v,))),  # pylint: disable=protected-access
]
CASES = ([(what, path, value, call) for what, path, call in NAME_CALLS for value in BAD_NAMES]
         + [(what, path, value, call) for what, path, call in IFNAME_CALLS for value in BAD_IFNAMES]
         + OTHER_CALLS)


@pytest.mark.parametrize("what, path, value, call", CASES, ids=[f"{c[0]}: {c[2]!r}"[:60] for c in CASES])
def test_rejected_naming_the_option_before_any_system_call(monkeypatch, what, path, value, call):
    with nothing_touched(monkeypatch):
        with pytest.raises(ConfigError) as caught:
            call(value)
    assert caught.value.path == path, what
    assert caught.value.message
    if caught.value.value is not ConfigError._NO_VALUE:  # pylint: disable=protected-access
        assert value in (caught.value.value if isinstance(caught.value.value, (list, tuple)) else [caught.value.value]) \
            or str(value) in str(caught.value.value)


# -- the modules, as Ansible runs them ------------------------------------------------------------

MODULE_CASES = [
    ("cni_attach", {"network": "n", "netns": "cnit-r-h1", "container_id": "../../etc/passwd"}, "container_id"),
    ("cni_attach", {"network": "n", "netns": "cnit-r-h1", "ifname": "eth0/../x"}, "ifname"),
    ("cni_attach", {"network": "n", "netns": "cnit-r-h1 x", "create_netns": True}, "netns"),
    ("cni_attach", {"network": "n", "netns": "cnit-r-h1", "args": {"K": "v;IgnoreUnknown=1"}}, "args[0]"),
    ("cni_attach", {"network": "n", "attachments": [{"netns": "cnit-r-h1", "container_id": "a\x00b"}]},
     "attachments[0].container_id"),
    ("cni_netns", {"name": "../../etc"}, "name"),
    ("cni_netns", {"name": "cnit-r-" + "x" * 250}, "name"),
    ("cni_network", {"name": "../evil", "plugins": [{"type": "bridge"}]}, "name"),
    ("cni_network", {"name": "n", "filename": "../../evil.conflist", "plugins": [{"type": "bridge"}]}, "filename"),
    ("cni_gc", {"valid_attachments": [{"container_id": "x/../../y"}]}, "valid_attachments[0].container_id"),
    ("cni_plugin_install", {"src_dir": "/usr/lib/cni", "plugins": ["../../../bin/sh"]}, "plugins"),
    ("cni_route", {"routes": [{"dst": "10.254.232.0", "via": "10.254.231.5"}]}, "routes[0].dst"),
    ("cni_route", {"routes": [{"dst": "10.254.232.0/24", "via": "cnit-r-peer"}]}, "routes[0].via"),
    ("cni_cluster_member", {"network": "../../etc", "state": "absent"}, "network"),
    ("cni_cluster_member", {"network": "n", "cidr": "10.244.0.1/16", "subnet": "10.244.1.0/24"}, "cidr"),
    ("cni_cluster_member", {"network": "n", "cidr": "10.244.0.0/16", "subnet": "10.245.1.0/24"}, "subnet"),
]


@pytest.mark.parametrize("module, args, option", MODULE_CASES, ids=[f"{case[0]}: {case[2]}" for case in MODULE_CASES])
def test_modules_fail_naming_the_option_and_create_nothing(tmp_path, module, args, option):
    if os.geteuid() != 0:
        pytest.skip("the modules run as root on a host")
    root = tmp_path / "host"
    paths = {"conf_dir": str(root / "net.d"), "cache_dir": str(root / "cache"), "cni_path": [str(root / "bin")]}
    if module == "cni_plugin_install":
        paths = {"dest": str(root / "bin")}
    namespaces = netns_names()

    result = modules.run(module, dict(args, **paths), str(tmp_path / "moduletmp"))

    assert result.get("failed") is True, result
    assert result["msg"].startswith(f"{option}: "), result["msg"]
    assert result.get("error", {}).get("path") == option
    assert not root.exists(), f"{module} created {sorted(str(p) for p in root.rglob('*'))}"
    assert netns_names() == namespaces
    shutil.rmtree(tmp_path / "moduletmp", ignore_errors=True)
