# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The routed network's subnets file (_subnets_file) and cni_cluster_subnets' task
(_cluster_subnets_task.run): strict reading, stable rendering (a join is one added line), atomic
writes only on change, check mode, and the lock that keeps two plays at once from losing an
entry, shown with two real processes."""

from __future__ import annotations

import contextlib
import difflib
import multiprocessing
import os
import time

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils import _cluster_subnets_task, _subnets_file
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError

CIDR = "10.244.0.0/16"


def members(*names: str, out_of_play: tuple = ()) -> dict:
    return {name: {"address": f"192.0.2.{index + 1}", "in_play": name not in out_of_play, "recorded": None,
                   "attachments": 0 if name not in out_of_play else None}
            for index, name in enumerate(names)}


def params(path, group: dict, cidr=CIDR) -> dict:
    return {"path": str(path), "cidr": cidr, "host_prefix": 24, "network": "cluster", "members": group}


# --- reading ---------------------------------------------------------------------------------

def test_a_missing_file_reads_as_none(tmp_path):
    assert _subnets_file.read(str(tmp_path / "absent.yml")) == (None, None)


def test_an_empty_file_reads_as_no_content(tmp_path):
    (tmp_path / "s.yml").write_text("# nothing yet\n")
    assert _subnets_file.read(str(tmp_path / "s.yml")) == ("# nothing yet\n", None)


@pytest.mark.parametrize("text, message", [
    ("subnets:\n  a: 10.244.0.0/24\n  a: 10.244.1.0/24\n", "found the key 'a' a second time"),
    ("subnets: {a: [\n", "is not valid YAML"),
    ("subnets: !!python/object:os.system {}\n", "is not valid YAML"),
])
def test_a_broken_file_is_an_error_naming_it(tmp_path, text, message):
    path = tmp_path / "s.yml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        _subnets_file.read(str(path))
    assert caught.value.path == str(path) and message in str(caught.value)


def test_the_strict_loader_is_made_once():
    """Not a new loader class for every read, and for every line rendering asks the parser about."""
    assert _subnets_file._strict_loader()[1] is _subnets_file._strict_loader()[1]


def test_an_unreadable_file_is_an_error_naming_it(tmp_path):
    with pytest.raises(ConfigError, match=f"^{tmp_path}: cannot be read: Is a directory"):
        _subnets_file.read(str(tmp_path))
    (tmp_path / "s.yml").write_bytes(b"cidr: \xff\n")
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        _subnets_file.read(str(tmp_path / "s.yml"))


# --- rendering ------------------------------------------------------------------------------

def test_render_is_the_documented_layout():
    content = {"cidr": CIDR, "host_prefix": 24, "subnets": {"fleet-1": "10.244.0.0/24"},
               "released": {"old-host": "10.244.5.0/24"}}
    assert _subnets_file.render(content, "cluster") == (
        "# Subnets of the routed network 'cluster', kept by cnikit.cni.routed_network. Review and commit.\n"
        "cidr: 10.244.0.0/16\n"
        "host_prefix: 24\n"
        "subnets:\n"
        "  fleet-1: 10.244.0.0/24\n"
        "released:            # members that left the group; not handed out again until removed here\n"
        "  old-host: 10.244.5.0/24\n")


@pytest.mark.parametrize("host", ["node1", "10.0.0.1", "1", "yes", "null", "a: b", "#x", "fd00::1", "é"])
def test_render_reads_back_as_written_whatever_the_host_name(tmp_path, host):
    content = {"cidr": "fd00:10::/32", "host_prefix": 64, "subnets": {host: "fd00:10::/64", "b": "fd00:10:0:1::/64"},
               "released": {}}
    path = tmp_path / "s.yml"
    path.write_text(_subnets_file.render(content, "it's\nodd"))
    assert _subnets_file.read(str(path))[1] == content


def test_a_join_is_one_added_line_and_a_rerun_writes_nothing(tmp_path):
    path = tmp_path / "cni_cluster_subnets.yml"
    _cluster_subnets_task.run(params(path, members("b", "c", "d")), check_mode=False)
    before = path.read_text()
    result = _cluster_subnets_task.run(params(path, members("a", "b", "c", "d")), check_mode=False)
    diff = [line for line in difflib.unified_diff(before.splitlines(), path.read_text().splitlines(), lineterm="", n=0)
            if not line.startswith(("---", "+++", "@@"))]
    assert diff == ["+  a: 10.244.3.0/24"]
    assert result["changes"] == ["a: allocated 10.244.3.0/24"]
    inode = path.stat().st_ino
    again = _cluster_subnets_task.run(params(path, members("a", "b", "c", "d")), check_mode=False)
    assert not again["changed"] and path.stat().st_ino == inode


# --- writing --------------------------------------------------------------------------------

def test_the_file_is_replaced_atomically_keeping_its_mode_and_a_symlink(tmp_path):
    real = tmp_path / "real.yml"
    _cluster_subnets_task.run(params(real, members("a")), check_mode=False)
    assert real.stat().st_mode & 0o777 == 0o644
    real.chmod(0o600)
    link = tmp_path / "link.yml"
    link.symlink_to(real)
    _cluster_subnets_task.run(params(link, members("a", "b")), check_mode=False)
    assert link.is_symlink() and real.stat().st_mode & 0o777 == 0o600
    assert "  b: 10.244.1.0/24\n" in real.read_text()
    assert sorted(os.listdir(tmp_path)) == [".real.yml.lock", "link.yml", "real.yml"]


def test_a_file_reformatted_by_hand_with_the_same_content_is_left_alone(tmp_path):
    path = tmp_path / "s.yml"
    path.write_text("# ours\ncidr: '10.244.0.0/16'\nhost_prefix: 24\nsubnets: {a: 10.244.0.0/24}\n")
    result = _cluster_subnets_task.run(params(path, members("a")), check_mode=False)
    assert not result["changed"] and path.read_text().startswith("# ours\n")


def test_bad_input_changes_nothing(tmp_path):
    path = tmp_path / "s.yml"
    _cluster_subnets_task.run(params(path, members("a")), check_mode=False)
    before = path.read_text()
    group = members("a", "b")
    group["b"]["address"] = group["a"]["address"]
    with pytest.raises(ConfigError, match="members.b.address"):
        _cluster_subnets_task.run(params(path, group), check_mode=False)
    assert path.read_text() == before


def test_a_missing_directory_is_an_error_naming_it(tmp_path):
    with pytest.raises(ConfigError, match=f"^path: its directory {tmp_path}/inventory does not exist"):
        _cluster_subnets_task.run(params(tmp_path / "inventory" / "s.yml", members("a")), check_mode=False)
    assert os.listdir(tmp_path) == []


def test_check_mode_predicts_the_file_and_writes_nothing(tmp_path):
    path = tmp_path / "s.yml"
    predicted = _cluster_subnets_task.run(params(path, members("a", "b")), check_mode=True)
    assert os.listdir(tmp_path) == []
    assert predicted["diff"]["before"] == "" and predicted["diff"]["before_header"] == str(path)
    real = _cluster_subnets_task.run(params(path, members("a", "b")), check_mode=False)
    assert real == predicted and path.read_text() == real["diff"]["after"]
    assert real["subnets"] == {"a": "10.244.0.0/24", "b": "10.244.1.0/24"}


# --- two plays at once ------------------------------------------------------------------------

def _join_slowly(path: str, group: dict, start, use_lock: bool, queue) -> None:
    """One play's allocation, slowed between the read and the write so that another play's falls
    inside it (the delay is the only thing injected)."""
    read = _subnets_file.read

    def slow_read(target):
        outcome = read(target)
        time.sleep(0.5)
        return outcome

    _subnets_file.read = slow_read
    if not use_lock:
        _subnets_file.locked = lambda _path: contextlib.nullcontext()
    start.wait()
    try:
        queue.put(_cluster_subnets_task.run(params(path, group), check_mode=False)["subnets"])
    except Exception as error:  # pylint: disable=broad-exception-caught  # reported to the test
        queue.put(repr(error))


def _two_plays_at_once(path, use_lock: bool) -> list:
    """Two plays of one group at once, each with another new member in it (--limit b, --limit c)."""
    _cluster_subnets_task.run(params(path, members("a")), check_mode=False)
    context = multiprocessing.get_context("fork")
    start, queue = context.Event(), context.Queue()
    plays = [context.Process(target=_join_slowly, args=(str(path), members("a", "b", "c", out_of_play=(other,)),
                                                        start, use_lock, queue))
             for other in ("c", "b")]
    for play in plays:
        play.start()
    start.set()
    outcomes = [queue.get(timeout=30) for _play in plays]
    for play in plays:
        play.join(timeout=30)
    return outcomes


def test_two_plays_at_once_both_keep_their_new_member(tmp_path):
    path = tmp_path / "s.yml"
    outcomes = _two_plays_at_once(path, use_lock=True)
    assert all(isinstance(outcome, dict) for outcome in outcomes), outcomes
    subnets = _subnets_file.read(str(path))[1]["subnets"]
    assert set(subnets) == {"a", "b", "c"} and len(set(subnets.values())) == 3


def test_without_the_lock_two_plays_at_once_lose_an_entry(tmp_path):
    """The control of the test above: its race is real."""
    path = tmp_path / "s.yml"
    _two_plays_at_once(path, use_lock=False)
    assert set(_subnets_file.read(str(path))[1]["subnets"]) != {"a", "b", "c"}


# --- dual stack ---------------------------------------------------------------------------------

def dual(path, group: dict) -> dict:
    for spec in group.values():
        spec["address_v6"] = "2001:db8::" + spec["address"].rsplit(".", 1)[1]
    return dict(params(path, group), cidr_v6="fd44::/48", host_prefix_v6=64)


def test_render_of_a_dual_stack_network_keeps_each_family_in_its_own_keys():
    content = {"cidr": CIDR, "host_prefix": 24, "subnets": {"a": "10.244.0.0/24"}, "released": {},
               "cidr_v6": "fd44::/48", "host_prefix_v6": 64, "subnets_v6": {"a": "fd44::/64"},
               "released_v6": {"old-host": "fd44:0:0:5::/64"}}
    assert _subnets_file.render(content, "cluster") == (
        "# Subnets of the routed network 'cluster', kept by cnikit.cni.routed_network. Review and commit.\n"
        "cidr: 10.244.0.0/16\n"
        "host_prefix: 24\n"
        "cidr_v6: fd44::/48\n"
        "host_prefix_v6: 64\n"
        "subnets:\n"
        "  a: 10.244.0.0/24\n"
        "subnets_v6:\n"
        "  a: fd44::/64\n"
        "released: {}         # members that left the group; not handed out again until removed here\n"
        "released_v6:         # members that left the group; not handed out again until removed here\n"
        "  old-host: fd44:0:0:5::/64\n")


def test_an_ipv4_file_turned_dual_stack_keeps_its_lines_and_a_join_adds_one_line_per_family(tmp_path):
    path = tmp_path / "cni_cluster_subnets.yml"
    _cluster_subnets_task.run(params(path, members("b", "c")), check_mode=False)
    ipv4_only = path.read_text()
    result = _cluster_subnets_task.run(dual(path, members("b", "c")), check_mode=False)
    assert result["subnets"] == {"b": "10.244.0.0/24", "c": "10.244.1.0/24"}
    assert result["subnets_v6"] == {"b": "fd44::/64", "c": "fd44:0:0:1::/64"}
    assert result["addresses_v6"] == {"b": "2001:db8::1", "c": "2001:db8::2"}
    assert result["gateways"] == {"b": "10.244.0.1/24", "c": "10.244.1.1/24"}
    assert result["gateways_v6"] == {"b": "fd44::1/64", "c": "fd44:0:0:1::1/64"}
    diff = [line for line in difflib.unified_diff(ipv4_only.splitlines(), path.read_text().splitlines(), lineterm="",
                                                  n=0) if line.startswith("-") and not line.startswith("---")]
    assert diff == []  # the IPv4 lines stay as they were
    before = path.read_text()
    _cluster_subnets_task.run(dual(path, members("b", "c", "a")), check_mode=False)
    added = [line for line in difflib.unified_diff(before.splitlines(), path.read_text().splitlines(), lineterm="", n=0)
             if not line.startswith(("---", "+++", "@@"))]
    assert added == ["+  a: 10.244.2.0/24", "+  a: fd44:0:0:2::/64"]
    again = _cluster_subnets_task.run(dual(path, members("b", "c", "a")), check_mode=True)
    assert not again["changed"]


def test_an_ipv4_result_has_no_ipv6_keys_filled(tmp_path):
    result = _cluster_subnets_task.run(params(tmp_path / "s.yml", members("a")), check_mode=False)
    assert result["subnets_v6"] == {} and result["addresses_v6"] == {} and result["released_v6"] == {}
    assert result["gateways"] == {"a": "10.244.0.1/24"} and result["gateways_v6"] == {}
