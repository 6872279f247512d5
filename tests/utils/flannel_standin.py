# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A STAND-IN for flannel's CNI plugin (flannel-io/cni-plugin), for tests only.

No package registry these machines reach ships the flannel binary, so the tests install this
script as ``flannel`` beside the real reference plugins. It is not flannel: it does what
flannel's plugin documents and does, written anew from that contract, so that a test walks the
path a kubelet host takes (flannel -> bridge -> host-local, then portmap):

- ``subnetFile`` (default /run/flannel/subnet.env; tests pass a path of their own) gives
  FLANNEL_NETWORK (comma-separated), FLANNEL_SUBNET, FLANNEL_MTU and FLANNEL_IPMASQ (and their
  IPv6 forms); one of each family pair, FLANNEL_MTU and FLANNEL_IPMASQ are required.
- ADD builds the delegate's configuration from ``delegate``: ``name`` and ``cniVersion`` from
  the network, ``type`` bridge unless given, ``ipMasq`` the inverse of FLANNEL_IPMASQ and ``mtu``
  FLANNEL_MTU unless given, ``isGateway`` true for bridge unless given, the network's
  ``runtimeConfig`` passed on, and ``ipam`` from the network's ``ipam`` (type host-local unless
  given) with ``ranges`` set to the flannel subnet(s) and ``routes`` extended by the flannel
  network(s). ``delegate`` must not hold ``name`` or ``ipam``. The configuration is saved to
  ``<dataDir>/<CNI_CONTAINERID>`` (default dataDir /var/lib/cni/flannel; tests pass their own),
  then the delegate found along CNI_PATH runs ADD with the runtime's environment, and its
  result (or error) is flannel's.
- DEL reads the saved configuration back (none, or unreadable: nothing to do, success), runs
  the delegate's DEL with it and removes the file. As flannel does, the file is removed even
  when the delegate's DEL fails, so a retried DEL no longer reaches the delegate.
- CHECK, as flannel's skel-based main: refused below cniVersion 0.4.0 (code 1, "config version
  does not allow CHECK"); from 0.4.0 on it succeeds without checking anything, since flannel's
  CHECK is not implemented (its cmdCheck returns nil) and so never reaches the delegate.
- GC and STATUS succeed from cniVersion 1.1.0 on, doing nothing (flannel has no handlers for
  them); VERSION answers every version from 0.1.0 to 1.1.0, as flannel built with libcni 1.3.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys

SUPPORTED_VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]
DEFAULT_SUBNET_FILE = "/run/flannel/subnet.env"
DEFAULT_DATA_DIR = "/var/lib/cni/flannel"
INCOMPATIBLE_VERSION, INVALID_ENVIRONMENT, INTERNAL = 1, 4, 999  # libcni's error codes


class PluginError(Exception):
    def __init__(self, code: int, msg: str, details: str = ""):
        super().__init__(msg)
        self.error = {"code": code, "msg": msg, "details": details}


def _version(text: str) -> tuple:
    return tuple(int(part) for part in (text or "0.1.0").split("."))


def load_subnet_env(path: str) -> dict:
    """The subnet file's values, as flannel parses them (networks and subnets as networks)."""
    values = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle.read().splitlines():
            key, value = line.split("=", 1) if "=" in line else (line, "")
            if key in ("FLANNEL_NETWORK", "FLANNEL_IPV6_NETWORK"):
                networks = []
                for cidr in value.split(","):
                    network = ipaddress.ip_network(cidr, strict=False)
                    if network not in networks:
                        networks.append(network)
                values[key] = networks
            elif key in ("FLANNEL_SUBNET", "FLANNEL_IPV6_SUBNET"):
                values[key] = ipaddress.ip_network(value, strict=False)
            elif key == "FLANNEL_MTU":
                values[key] = int(value)
            elif key == "FLANNEL_IPMASQ":
                values[key] = value == "true"
    missing = []
    for pair in (("FLANNEL_NETWORK", "FLANNEL_IPV6_NETWORK"), ("FLANNEL_SUBNET", "FLANNEL_IPV6_SUBNET")):
        if not any(values.get(key) for key in pair):
            missing.extend(pair)
    missing.extend(key for key in ("FLANNEL_MTU", "FLANNEL_IPMASQ") if key not in values)
    if missing:
        raise ValueError(f"{path} is missing {', '.join(missing)}")
    return values


def delegate_config(conf: dict, subnet: dict) -> dict:
    """The configuration flannel hands its delegate."""
    delegate = dict(conf.get("delegate") or {})
    for forbidden in ("name", "ipam"):
        if forbidden in delegate:
            raise PluginError(INTERNAL, f"'delegate' dictionary must not have '{forbidden}' field, it'll be set by flannel")
    if "type" in delegate and not isinstance(delegate["type"], str):
        raise PluginError(INTERNAL, "'delegate' dictionary, if present, must have (string) 'type' field")
    if conf.get("runtimeConfig") is not None:
        delegate["runtimeConfig"] = conf["runtimeConfig"]
    delegate["name"] = conf.get("name")
    delegate.setdefault("type", "bridge")
    delegate.setdefault("ipMasq", not subnet["FLANNEL_IPMASQ"])
    delegate.setdefault("mtu", subnet["FLANNEL_MTU"])
    if delegate["type"] == "bridge":
        delegate.setdefault("isGateway", True)
    if conf.get("cniVersion"):
        delegate["cniVersion"] = conf["cniVersion"]
    ipam = dict(conf.get("ipam") or {})
    ipam.setdefault("type", "host-local")
    ipam["ranges"] = [[{"subnet": str(subnet[key])}] for key in ("FLANNEL_SUBNET", "FLANNEL_IPV6_SUBNET")
                      if subnet.get(key)]
    networks = subnet.get("FLANNEL_NETWORK", []) + subnet.get("FLANNEL_IPV6_NETWORK", [])
    ipam["routes"] = list(ipam.get("routes") or []) + [{"dst": str(network)} for network in networks]
    delegate["ipam"] = ipam
    return delegate


def find_plugin(plugin_type: str) -> str:
    for directory in os.environ.get("CNI_PATH", "").split(os.pathsep):
        path = os.path.join(directory, plugin_type)
        if directory and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise PluginError(INTERNAL, f"failed to find plugin \"{plugin_type}\" in path "
                                f"[{os.environ.get('CNI_PATH', '')}]")


def delegate(verb: str, plugin_type: str, config: bytes) -> bytes:
    """Run the delegate as libcni's invoke package does: this plugin's environment with
    CNI_COMMAND set, the configuration on stdin. Its error, if any, becomes ours unchanged."""
    env = dict(os.environ, CNI_COMMAND=verb)
    done = subprocess.run([find_plugin(plugin_type)], input=config, env=env, capture_output=True, check=False)
    if done.returncode:
        try:
            error = json.loads(done.stdout)
        except ValueError:
            error = None
        if isinstance(error, dict) and "code" in error:
            raise PluginError(error["code"], error.get("msg", ""), error.get("details", ""))
        raise PluginError(INTERNAL, f"netplugin failed: {done.stderr.decode(errors='replace') or done.stdout!r}")
    return done.stdout


def saved_path(conf: dict) -> str:
    return os.path.join(conf.get("dataDir") or DEFAULT_DATA_DIR, os.environ["CNI_CONTAINERID"])


def save(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def cmd_add(conf: dict) -> None:
    path = conf.get("subnetFile") or DEFAULT_SUBNET_FILE
    try:
        subnet = load_subnet_env(path)
    except (OSError, ValueError) as exc:
        raise PluginError(INTERNAL, f"failed to load flannel 'subnet.env' file: {exc}. "
                                    "Check the flannel pod log for this node.") from exc
    config = delegate_config(conf, subnet)
    data = json.dumps(config, sort_keys=True).encode()  # as Go marshals a map
    save(saved_path(conf), data)
    result = json.loads(delegate("ADD", config["type"], data))
    print(json.dumps(result, indent=4))


def cmd_del(conf: dict) -> None:
    path = saved_path(conf)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return  # already gone: DEL must succeed
    try:
        config = json.loads(data)
    except ValueError as exc:
        print(f"failed to parse netconf: {exc}", file=sys.stderr)
        return  # flannel gives up on an unreadable file, leaving it and the interface
    try:
        delegate("DEL", config.get("type", ""), data)
    finally:
        os.remove(path)


def _require_version(conf: dict, verb: str, minimum: str) -> None:
    if _version(conf.get("cniVersion")) < _version(minimum):
        raise PluginError(INCOMPATIBLE_VERSION, f"config version does not allow {verb}")


def main() -> int:
    verb = os.environ.get("CNI_COMMAND", "")
    if verb == "VERSION":
        print(json.dumps({"cniVersion": SUPPORTED_VERSIONS[-1], "supportedVersions": SUPPORTED_VERSIONS}))
        return 0
    if not verb:
        print("CNI Plugin flannel STAND-IN (tests/utils/flannel_standin.py), not flannel\n"
              f"CNI protocol versions supported: {', '.join(SUPPORTED_VERSIONS)}", file=sys.stderr)
        return 0
    try:
        conf = json.loads(sys.stdin.buffer.read() or b"{}")
        if conf.get("cniVersion", "") and conf["cniVersion"] not in SUPPORTED_VERSIONS:
            raise PluginError(INCOMPATIBLE_VERSION, "incompatible CNI versions", f"config is {conf['cniVersion']!r}")
        if verb in ("ADD", "DEL", "CHECK") and not os.environ.get("CNI_CONTAINERID"):
            raise PluginError(INVALID_ENVIRONMENT, "required env variables [CNI_CONTAINERID] missing")
        if verb == "ADD":
            cmd_add(conf)
        elif verb == "DEL":
            cmd_del(conf)
        elif verb == "CHECK":
            _require_version(conf, verb, "0.4.0")
        elif verb in ("GC", "STATUS"):
            _require_version(conf, verb, "1.1.0")
        else:
            raise PluginError(INVALID_ENVIRONMENT, f"unknown CNI_COMMAND: {verb}")
    except PluginError as exc:
        print(json.dumps(exc.error))
        return 1
    except (OSError, ValueError) as exc:  # flannel's own failures reach skel as plain errors
        print(json.dumps({"code": INTERNAL, "msg": str(exc)}))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
