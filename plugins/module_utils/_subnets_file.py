# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The routed network's subnets file on the controller: a YAML file operators review and
commit, read strictly, rendered stably (one line per host, the file's own order kept, so a
join is one added line in the diff) and replaced atomically under a lock held across the
read, the allocation and the write, so that two plays at once never lose an entry."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import stat

from ._errors import ConfigError
from ._fileio import atomic_write

# The suffix of a dual-stack network's IPv6 keys (cidr_v6, subnets_v6...) beside each IPv4 (or
# single-family) key: a file of one family reads as it always did.
V6 = "_v6"
HEADER = "# Subnets of the routed network {network!r}, kept by cnikit.cni.routed_network. Review and commit."
RELEASED_COMMENT = "# members that left the group; not handed out again until removed here"
NEW_FILE_MODE = 0o644
# Scalars YAML reads as the string they spell: names that start with a letter (but are none of
# YAML 1.1's booleans and nulls) and CIDRs as ipaddress writes them.
PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
PLAIN_CIDR = re.compile(r"[0-9a-fA-F][0-9a-fA-F.:]*/[0-9]+")
YAML_WORDS = frozenset(("y", "n", "yes", "no", "true", "false", "on", "off", "null"))


def lock_path(path: str) -> str:
    """The sibling file whose flock guards ``path`` (the file itself is replaced by a rename on
    each write, so a lock on it would guard the old copy). It stays: removing a lock file races
    with a writer that has just opened it."""
    directory, name = os.path.split(os.path.realpath(path))
    return os.path.join(directory, f".{name}.lock")


@contextlib.contextmanager
def locked(path: str):
    """Hold the exclusive lock of ``path`` for the ``with`` block; waits for another holder."""
    fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, NEW_FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


@functools.lru_cache(maxsize=None)
def _strict_loader():
    """PyYAML's safe loader (libyaml's when PyYAML has it), refusing a key written twice in one
    mapping: plain safe_load keeps the last, and would silently drop a host an operator listed
    twice. Imported here, on the controller: the module_utils that managed nodes import do not
    need PyYAML. Made once, on first use."""
    import yaml  # pylint: disable=import-outside-toplevel

    class StrictSafeLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _value in node.value:
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, (str, int, float, bool)) or key is None:
                    if key in seen:
                        raise yaml.constructor.ConstructorError(
                            "while reading a mapping", node.start_mark, f"found the key {key!r} a second time",
                            key_node.start_mark)
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return yaml, StrictSafeLoader


def read(path: str) -> tuple:
    """``(text, content)`` of the file; ``(None, None)`` when there is none. An empty file counts
    as none. A file that cannot be read or parsed is a ConfigError naming it."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return None, None
    except OSError as error:
        raise ConfigError(path, f"cannot be read: {error.strerror or error}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(path, f"is not UTF-8 text (byte {error.start})") from None
    yaml, loader = _strict_loader()
    try:
        content = yaml.load(text, Loader=loader)
    except yaml.YAMLError as error:
        raise ConfigError(path, f"is not valid YAML: {' '.join(str(error).split())}") from None
    return text, content


def _pair(key: str, value: str) -> str:
    """``key: value`` as one YAML line: plain when it reads back as written, else both quoted
    (a JSON string is a YAML double-quoted scalar). Host names and CIDRs are plain at a glance;
    anything else is asked of the parser."""
    line = f"{key}: {value}"
    if _plainly_a_string(key) and (_plainly_a_string(value) or PLAIN_CIDR.fullmatch(value)):
        return line
    yaml, loader = _strict_loader()
    try:
        if yaml.load(line, Loader=loader) == {key: value}:
            return line
    except yaml.YAMLError:
        pass
    return f"{json.dumps(key)}: {json.dumps(value)}"


def _plainly_a_string(text: str) -> bool:
    return bool(PLAIN_NAME.fullmatch(text)) and text.lower() not in YAML_WORDS


def _section(key: str, entries: dict, comment: str = "") -> list:
    head = f"{key}: {{}}" if not entries else f"{key}:"
    lines = [f"{head:<20} {comment}" if comment else head]
    lines += [f"  {_pair(host, subnet)}" for host, subnet in entries.items()]
    return lines


def render(content: dict, network: str) -> str:
    """The file's text for ``content`` (as ``_allocation.allocate_stack`` makes it): the same
    content always gives the same text, hosts in the order the content has them. A dual-stack
    network's IPv6 keys (``cidr_v6``...) follow each IPv4 one, so an IPv4 file turned dual stack
    keeps its lines."""
    families = ("", V6) if "cidr" + V6 in content else ("",)
    lines = [HEADER.format(network=network)]
    for suffix in families:
        lines += [_pair("cidr" + suffix, content["cidr" + suffix]),
                  f"host_prefix{suffix}: {int(content['host_prefix' + suffix])}"]
    for suffix in families:
        lines += _section("subnets" + suffix, content["subnets" + suffix])
    for suffix in families:
        lines += _section("released" + suffix, content["released" + suffix], RELEASED_COMMENT)
    return "\n".join(lines) + "\n"


def write(path: str, text: str) -> None:
    """Replace the file with ``text`` atomically, keeping its mode (a new file gets 0644). A
    symbolic link is followed: the file it points to is replaced, the link stays."""
    target = os.path.realpath(path)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    atomic_write(target, text.encode("utf-8"), mode)
