"""Remove what tests left on the host: network namespaces and links whose name starts with a
test prefix, the filter rules that match on such an interface (the firewall plugin's isolation
rules), and portmap's global CNI-HOSTPORT-* iptables chains once no container uses them.

Usage: python tests/utils/hostclean.py PREFIX [--ip-forward 0|1]
Importable too: ``clean(prefix)``, and ``delete_cached(engine)`` for the attachments a test's
engine still has cached. Never touches a name without the prefix."""

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


def drop_interface_rules(matches) -> list:
    """Delete the filter table's rules, IPv4 and IPv6, that match on an interface (``-i``/``-o``)
    for which ``matches(name)`` holds: the firewall plugin's ingressPolicy rules, which its DEL
    leaves for the bridge's other containers. Returns the rules deleted."""
    dropped = []
    for command in ("iptables", "ip6tables"):
        for line in _run(command, "-S").stdout.splitlines():
            words = shlex.split(line)
            interfaces = [words[i + 1] for i, word in enumerate(words[:-1]) if word in ("-i", "-o")]
            if words[:1] == ["-A"] and any(matches(name) for name in interfaces):
                _run(command, "-D", *words[1:])
                dropped.append(f"{command} {line}")
    return dropped


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


def delete_cached(engine) -> None:
    """DEL every attachment still in ``engine``'s cache (a test that failed half-way), so that
    what lives outside the namespaces goes too: portmap's rules, a dhcp daemon's lease. Errors
    are ignored: teardown removes what it can."""
    # pylint: disable=import-outside-toplevel  # the collection is importable once tests run
    from ansible_collections.cnikit.cni.plugins.module_utils._errors import CNIError

    entries, _problems = engine.cache.entries()
    for entry in entries:
        try:
            engine.delete_as_added(entry)
        except CNIError:
            pass


def clean(prefix: str, ip_forward: str | None = None) -> dict:
    if not prefix:
        raise ValueError("a prefix is required")
    report = {"namespaces": clean_namespaces(prefix), "links": clean_links(prefix),
              "interface_rules": drop_interface_rules(lambda name: name.startswith(prefix)),
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
