"""Remove what tests left on the host: network namespaces and links whose name starts with a
test prefix, and portmap's global CNI-HOSTPORT-* iptables chains once no container uses them.

Usage: python tests/utils/hostclean.py PREFIX [--ip-forward 0|1]
Importable too: ``clean(prefix)``. Never touches a name without the prefix."""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess

PORTMAP_CHAINS = ("CNI-HOSTPORT-DNAT", "CNI-HOSTPORT-MASQ", "CNI-HOSTPORT-SETMARK")
PORTMAP_JUMPS = (
    ("PREROUTING", ["-m", "addrtype", "--dst-type", "LOCAL", "-j", "CNI-HOSTPORT-DNAT"]),
    ("OUTPUT", ["-m", "addrtype", "--dst-type", "LOCAL", "-j", "CNI-HOSTPORT-DNAT"]),
    ("POSTROUTING", ["-m", "comment", "--comment", "CNI portfwd requiring masquerade", "-j", "CNI-HOSTPORT-MASQ"]),
)


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def delete_cached_attachments(engine) -> None:
    """DEL every attachment ``engine``'s cache still holds, with the configuration cached at its
    ADD: what a test that failed half-way leaves (portmap's per-container rules among it; the
    namespaces and links go with ``clean``). Errors are ignored: this is a best-effort teardown."""
    # Imported here: run as a script, this module needs no collection on the path.
    from ansible_collections.cnikit.cni.plugins.module_utils._engine import Attachment  # pylint: disable=import-outside-toplevel
    from ansible_collections.cnikit.cni.plugins.module_utils._errors import CNIError  # pylint: disable=import-outside-toplevel

    entries, _problems = engine.cached_attachments()
    for entry in entries:
        try:
            engine.delete(engine.cached_network(entry), Attachment.from_cache(entry))
        except CNIError:
            pass


def drop_portmap_rules(rules: list) -> list:
    """Delete these ``iptables -t nat -S`` lines (portmap's rules of containers whose DEL did not
    run) and the CNI-DN-* chains they jump to; returns the chains removed."""
    rules = [line for line in rules if line.startswith("-A ")]
    chains = sorted({line.rsplit(" -j ", 1)[1].split()[0] for line in rules if " -j CNI-DN-" in line})
    for line in rules:
        _run("iptables", "-t", "nat", "-D", *shlex.split(line)[1:])
    for chain in chains:
        _run("iptables", "-t", "nat", "-F", chain)
        _run("iptables", "-t", "nat", "-X", chain)
    return chains


def clean_namespaces(prefix: str) -> list:
    names = [line.split()[0] for line in _run("ip", "netns", "list").stdout.splitlines() if line.strip()]
    removed = [n for n in names if n.startswith(prefix)]
    for name in removed:
        _run("ip", "netns", "del", name)
    return removed


def clean_links(prefix: str) -> list:
    links = json.loads(_run("ip", "-j", "link", "show").stdout or "[]")
    removed = [link["ifname"] for link in links if link["ifname"].startswith(prefix)]
    for name in removed:
        _run("ip", "link", "del", name)
    return removed


def clean_portmap_chains() -> bool:
    """Drop portmap's global chains when no per-container CNI-DN-* chain is left."""
    rules = _run("iptables", "-t", "nat", "-S").stdout
    if "CNI-HOSTPORT-DNAT" not in rules or "-N CNI-DN-" in rules:
        return False
    for chain, spec in PORTMAP_JUMPS:
        _run("iptables", "-t", "nat", "-D", chain, *spec)
    for chain in PORTMAP_CHAINS:
        _run("iptables", "-t", "nat", "-F", chain)
        _run("iptables", "-t", "nat", "-X", chain)
    return True


def clean(prefix: str, ip_forward: str | None = None) -> dict:
    if not prefix:
        raise ValueError("a prefix is required")
    report = {"namespaces": clean_namespaces(prefix), "links": clean_links(prefix),
              "portmap_chains": clean_portmap_chains()}
    if ip_forward is not None:
        _run("sysctl", "-qw", f"net.ipv4.ip_forward={ip_forward}")
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefix")
    parser.add_argument("--ip-forward", choices=("0", "1"))
    options = parser.parse_args()
    print(json.dumps(clean(options.prefix, options.ip_forward)))
