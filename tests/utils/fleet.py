# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A fleet of simulated SSH hosts on this machine, for the ``fleet`` molecule scenario and the
fleet benchmark.

Each host is an ``unshare --mount --net --uts --pid --fork --mount-proc`` whose first process is
its own sshd, with its own /proc and /sys, private tmpfs on /run (so /run/netns), /etc/cni/net.d,
/opt/cni/bin and /var/lib/cni, joined to the controller by a veth on a test bridge. Everything it makes is named
with the prefix given (links, the non-root login users, the sudoers file) and lives in the work
directory (keys, sshd configs, logs, state). Addresses come from a /24 given on the command
line, on that bridge only: nothing is routed off the machine.

A host given a Debian tree (``@TREE``, made by ``trees``) runs its sshd chrooted into an overlay of
that tree (the tree stays as built; what a run writes goes to a tmpfs that ends with the host), with
its own /proc, /sys, /dev and /run: its commands, Python and libraries are that release's.

Usage:
  fleet.py up --work DIR --prefix cnit-f- --subnet 10.199.0 HOST=ADDRESS_INDEX[:USER][@TREE] ...
  fleet.py down --work DIR --prefix cnit-f-
  fleet.py router --name cnit-s-router ADDRESS/LEN@BRIDGE ...
  fleet.py router-down --name cnit-s-router
  fleet.py venv DIR PYTHON REQUIREMENTS_FILE [--floors]
  fleet.py trees DIR SUITE ...

``trees`` builds (in parallel) a Debian userland per suite with debootstrap from the machine's own
mirror, with everything a host needs to converge offline, and prints each suite's directory.

``router`` joins fleets' bridges (each ``up`` makes one segment) through a network namespace of its
own that forwards between them, with ADDRESS on its link to each BRIDGE: the router hosts on
different segments reach each other through, never the machine's own namespace. ``router-down``
removes the namespace and its links.

``up`` prints ``{"changed": bool, ...}``: a fleet already up and answering is left alone.
``down`` removes everything ``up`` made, whatever state a failed run left."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

# Directories each host gets a private tmpfs on (created on the machine first if missing).
PRIVATE_DIRS = ("/run", "/etc/cni/net.d", "/opt/cni/bin", "/var/lib/cni")
SSHD = "/usr/sbin/sshd"
# The host's first process: mount its private directories, wait for its link, exec sshd.
BOOT = r"""
set -eu
hostname "$FLEET_HOSTNAME"
for dir in $FLEET_PRIVATE_DIRS; do mount -t tmpfs -o mode=0755,size=64m "$FLEET_PREFIX$FLEET_HOSTNAME" "$dir"; done
mkdir -p /run/netns /run/sshd
# /sys showing the host's own links (as /proc, from --mount-proc, shows its own processes).
mount -t sysfs "$FLEET_PREFIX$FLEET_HOSTNAME" /sys
# The host's own name must resolve (sudo asks), without touching the machine's /etc/hosts.
printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$FLEET_HOSTNAME" >/run/hosts
mount --bind /run/hosts /etc/hosts
ip link set lo up
tries=0
until ip link show "$FLEET_LINK" >/dev/null 2>&1; do
  tries=$((tries + 1)); [ "$tries" -lt 1000 ] || { echo "link $FLEET_LINK never arrived" >&2; exit 1; }
  sleep 0.01
done
ip addr add "$FLEET_ADDRESS/24" dev "$FLEET_LINK"
ip link set "$FLEET_LINK" up
[ -z "${FLEET_TREE:-}" ] || exec sh -c "$FLEET_TREE_BOOT"
exec "$FLEET_SSHD" -D -e -f "$FLEET_SSHD_CONFIG"
"""
# The rest of a tree host's start: its root, an overlay of the tree on a tmpfs that ends with the
# host; the work directory (keys, sshd config) at the same path inside; the login user and its sudo.
TREE_BOOT = r"""
set -eu
root="$FLEET_HOST_DIR/root" scratch="$FLEET_HOST_DIR/scratch"
mount -t tmpfs -o mode=0755 "$FLEET_PREFIX$FLEET_HOSTNAME" "$scratch"
mkdir "$scratch/upper" "$scratch/work"
mount -t overlay -o "lowerdir=$FLEET_TREE,upperdir=$scratch/upper,workdir=$scratch/work" "$FLEET_PREFIX$FLEET_HOSTNAME" "$root"
mount -t proc "$FLEET_PREFIX$FLEET_HOSTNAME" "$root/proc"
mount -t sysfs "$FLEET_PREFIX$FLEET_HOSTNAME" "$root/sys"
mount --rbind /dev "$root/dev"
mount -t tmpfs -o mode=0755 "$FLEET_PREFIX$FLEET_HOSTNAME" "$root/run"
mkdir -p "$root/run/netns" "$root/run/sshd" "$root$FLEET_WORK"
mount --bind "$FLEET_WORK" "$root$FLEET_WORK"
cp /run/hosts "$root/etc/hosts"
echo "$FLEET_HOSTNAME" >"$root/etc/hostname"
if [ "$FLEET_USER" != root ]; then
  chroot "$root" useradd --create-home --shell /bin/sh --password '*' "$FLEET_USER"
  echo "$FLEET_USER ALL=(ALL:ALL) NOPASSWD: ALL" >"$root/etc/sudoers.d/$FLEET_USER"
  chmod 0440 "$root/etc/sudoers.d/$FLEET_USER"
fi
exec chroot "$root" "$FLEET_SSHD" -D -e -f "$FLEET_SSHD_CONFIG"
"""
SSHD_CONFIG = """\
ListenAddress {address}
HostKey {work}/{host}/host_key
PidFile none
AuthorizedKeysFile {work}/authorized_keys/%u
# The key files live under /tmp, which StrictModes would refuse.
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PrintMotd no
MaxStartups 100:30:200
MaxSessions 100
Subsystem sftp /usr/lib/openssh/sftp-server
LogLevel ERROR
"""


def run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check)


def read_state(work: str) -> dict:
    try:
        with open(os.path.join(work, "state.json"), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def write_state(work: str, state: dict) -> None:
    with open(os.path.join(work, "state.json.tmp"), "w", encoding="utf-8") as out:
        json.dump(state, out, indent=1)
    os.replace(os.path.join(work, "state.json.tmp"), os.path.join(work, "state.json"))


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def answers(address: str, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((address, 22), timeout=timeout) as conn:
            return conn.recv(4).startswith(b"SSH-")
    except OSError:
        return False


# -- up ------------------------------------------------------------------------------------------

def parse_hosts(specs: list, subnet: str) -> list:
    hosts = []
    for spec in specs:
        spec, tree = (spec.split("@", 1) + [""])[:2]
        name, rest = (spec.split("=", 1) + [""])[:2]
        index, user = (rest.split(":", 1) + [""])[:2]
        if not name or not index.isdigit() or not 2 <= int(index) <= 254:
            raise SystemExit(f"fleet.py: host {spec!r}: expected NAME=INDEX[:USER][@TREE] with INDEX in 2..254")
        if tree and not os.path.isfile(os.path.join(tree, "etc/debian_version")):
            raise SystemExit(f"fleet.py: host {spec!r}: {tree} is not a Debian tree (fleet.py trees makes them)")
        hosts.append({"name": name, "index": int(index), "address": f"{subnet}.{index}", "user": user or "root",
                      "tree": os.path.abspath(tree) if tree else ""})
    return hosts


def is_up(state: dict, hosts: list) -> bool:
    """The fleet in ``state`` is the one asked for, and every host's sshd is running and answers."""
    known = {h["name"]: h for h in state.get("hosts", [])}
    return bool(hosts) and all(
        h["name"] in known and all(known[h["name"]].get(key) == h[key] for key in ("address", "user", "tree"))
        and alive(known[h["name"]]["pid"]) and answers(h["address"]) for h in hosts)


def keygen(path: str, comment: str) -> str:
    run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path)
    with open(path + ".pub", encoding="ascii") as handle:
        return handle.read().strip()


def ensure_user(user: str, prefix: str, state: dict) -> None:
    """A login user that may become root with sudo, without a password."""
    if user == "root" or user in state["users"]:
        return
    if not user.startswith(prefix):
        raise SystemExit(f"fleet.py: user {user!r} must start with {prefix!r}")
    if run("id", "-u", user, check=False).returncode != 0:
        # '*': no password, but not locked, so that sshd (without PAM) lets the key in.
        run("useradd", "--create-home", "--shell", "/bin/sh", "--password", "*", user)
    state["users"].append(user)
    sudoers = f"/etc/sudoers.d/{user}"
    with open(sudoers + ".tmp", "w", encoding="ascii") as out:
        out.write(f"{user} ALL=(ALL:ALL) NOPASSWD: ALL\n")
    os.chmod(sudoers + ".tmp", 0o440)
    run("visudo", "-c", "-q", "-f", sudoers + ".tmp")
    os.replace(sudoers + ".tmp", sudoers)


def ensure_mount_points(state: dict) -> None:
    """The private tmpfs need mount points; the ones this makes, ``down`` removes."""
    for directory in PRIVATE_DIRS:
        missing = []
        path = directory
        while not os.path.exists(path):
            missing.append(path)
            path = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        state["created_dirs"] += [p for p in missing if p not in state["created_dirs"]]


def start_host(host: dict, args, bridge: str, state: dict) -> None:
    work, prefix = args.work, args.prefix
    host_dir = os.path.join(work, host["name"])
    os.makedirs(host_dir, exist_ok=True)
    host["host_key"] = keygen(os.path.join(host_dir, "host_key"), host["name"])
    config = os.path.join(host_dir, "sshd_config")
    with open(config, "w", encoding="ascii") as out:
        out.write(SSHD_CONFIG.format(address=host["address"], work=work, host=host["name"]))
    outside, inside = f"{prefix}h{host['index']}", f"{prefix}p{host['index']}"
    run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
    state["links"].append(outside)
    run("ip", "link", "set", outside, "master", bridge, "up")
    if host["tree"]:
        os.makedirs(os.path.join(host_dir, "root"))
        os.makedirs(os.path.join(host_dir, "scratch"))
    env = dict(os.environ, FLEET_HOSTNAME=host["name"], FLEET_PREFIX=prefix, FLEET_LINK=inside,
               FLEET_ADDRESS=host["address"], FLEET_SSHD=SSHD, FLEET_SSHD_CONFIG=config,
               # A tree host's private directories are its overlay's.
               FLEET_PRIVATE_DIRS=" ".join(PRIVATE_DIRS[:1] if host["tree"] else PRIVATE_DIRS),
               FLEET_TREE=host["tree"], FLEET_TREE_BOOT=TREE_BOOT, FLEET_HOST_DIR=host_dir, FLEET_WORK=work,
               FLEET_USER=host["user"])
    with open(os.path.join(host_dir, "sshd.log"), "ab") as log:
        # It outlives this process, so no with-block.
        unshare = subprocess.Popen(  # pylint: disable=consider-using-with
            ["unshare", "--mount", "--net", "--uts", "--pid", "--fork", "--mount-proc", "--propagation", "private",
             "sh", "-c", BOOT], env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    host["unshare_pid"] = unshare.pid
    host["pid"] = first_process(unshare.pid)
    state["hosts"].append(host)
    write_state(work, state)
    run("ip", "link", "set", inside, "netns", str(host["pid"]))


def first_process(unshare_pid: int, timeout: float = 5.0) -> int:
    """The PID (on the machine) of the process ``unshare --fork`` started: the host's PID 1."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{unshare_pid}/task/{unshare_pid}/children", encoding="ascii") as handle:
                children = handle.read().split()
        except OSError:
            children = []
        if children:
            return int(children[0])
        time.sleep(0.005)
    raise SystemExit(f"fleet.py: unshare (pid {unshare_pid}) started no host process in {timeout:.0f} s")


def up(args) -> dict:
    hosts = parse_hosts(args.hosts, args.subnet)
    state = read_state(args.work)
    if is_up(state, hosts):
        return {"changed": False, "hosts": [h["name"] for h in hosts]}
    down(args)
    started = time.monotonic()
    os.makedirs(args.work, mode=0o755)  # sshd reads authorized_keys as the user
    state = {"hosts": [], "users": [], "links": [], "created_dirs": [], "prefix": args.prefix}
    write_state(args.work, state)
    ensure_mount_points(state)
    client_key = keygen(os.path.join(args.work, "id_ed25519"), f"{args.prefix}controller")
    os.makedirs(os.path.join(args.work, "authorized_keys"))
    for user in sorted({h["user"] for h in hosts}):
        if any(h["user"] == user and not h["tree"] for h in hosts):
            ensure_user(user, args.prefix, state)  # a tree host makes its users in its own /etc
        with open(os.path.join(args.work, "authorized_keys", user), "w", encoding="ascii") as out:
            out.write(client_key + "\n")
    write_state(args.work, state)
    bridge = f"{args.prefix}br0"
    run("ip", "link", "add", bridge, "type", "bridge")
    state["links"].append(bridge)
    run("ip", "addr", "add", f"{args.subnet}.1/24", "dev", bridge)
    run("ip", "link", "set", bridge, "up")
    for host in hosts:
        start_host(host, args, bridge, state)
    with open(os.path.join(args.work, "known_hosts"), "w", encoding="ascii") as out:
        out.writelines(f"{h['address']} {' '.join(h['host_key'].split()[:2])}\n" for h in hosts)
    wait_for_sshd(hosts, args.work)
    return {"changed": True, "hosts": [h["name"] for h in hosts], "seconds": round(time.monotonic() - started, 2)}


def wait_for_sshd(hosts: list, work: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    waiting = list(hosts)
    while waiting and time.monotonic() < deadline:
        waiting = [h for h in waiting if not answers(h["address"], 0.2)]
        if waiting:
            time.sleep(0.05)
    if waiting:
        logs = {h["name"]: open(os.path.join(work, h["name"], "sshd.log"), encoding="utf-8", errors="replace").read()[-500:]
                for h in waiting}
        raise SystemExit(f"fleet.py: sshd did not answer in {timeout:.0f} s on {[h['name'] for h in waiting]}: {logs}")


# -- down ----------------------------------------------------------------------------------------

def stop(pid: int) -> None:
    """End a process this fleet started, by its PID: SIGTERM, then SIGKILL after 3 s."""
    for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        if not alive(pid):
            return


def stray_hosts(work: str) -> list:
    """PIDs of host processes whose state was lost: the sshds reading a config of ``work`` (sshd
    rewrites its command line into one string, "sshd: /usr/sbin/sshd -D -e -f <config> [listener] ...")."""
    marker = f" -f {work}/".encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].startswith((b"sshd", SSHD.encode())) and marker in b" ".join(argv):
            pids.append(int(entry))
    return pids


def close_ssh_masters(work: str) -> None:
    """Ansible's ControlPersist connections to the hosts (sockets in <work>/cp)."""
    control_dir = os.path.join(work, "cp")
    if not os.path.isdir(control_dir):
        return
    for name in os.listdir(control_dir):
        run("ssh", "-o", f"ControlPath={os.path.join(control_dir, name)}", "-O", "exit", "fleet", check=False)


def remove_links(prefix: str) -> list:
    links = json.loads(run("ip", "-j", "link", "show").stdout or "[]")
    removed = [link["ifname"] for link in links if link["ifname"].startswith(prefix)]
    for name in removed:
        run("ip", "link", "del", name, check=False)
    return removed


def down(args) -> dict:
    if not args.prefix.startswith("cnit-"):
        raise SystemExit(f"fleet.py: prefix {args.prefix!r} must start with 'cnit-'")
    work = os.path.abspath(args.work)
    state = read_state(work)
    close_ssh_masters(work)
    for pid_file in sorted(f for f in (os.listdir(work) if os.path.isdir(work) else []) if f.endswith(".pid")):
        with open(os.path.join(work, pid_file), encoding="ascii") as handle:
            stop(int(handle.read().strip() or 0) or -1)
    hosts = state.get("hosts", [])
    # Killing a host's PID 1 ends every process of its PID namespace; its namespaces and mounts go with them.
    for pid in [h["pid"] for h in hosts] + stray_hosts(work):
        stop(pid)
    for host in hosts:
        stop(host["unshare_pid"])
    links = remove_links(args.prefix)
    for user in state.get("users", []):
        run("userdel", "--remove", user, check=False)
        if os.path.exists(f"/etc/sudoers.d/{user}"):
            os.remove(f"/etc/sudoers.d/{user}")
    for directory in sorted(state.get("created_dirs", []), key=len, reverse=True):
        try:
            os.rmdir(directory)
        except OSError:
            pass  # something else put files there since: not ours to remove
    shutil.rmtree(work, ignore_errors=True)
    return {"changed": bool(state or links), "hosts": [h["name"] for h in hosts], "links": links,
            "users": state.get("users", [])}


# -- a router between segments --------------------------------------------------------------------

def router(args) -> dict:
    """The namespace ``args.name``, one veth into each bridge with its address, forwarding IPv4."""
    if os.path.exists(f"/run/netns/{args.name}"):
        return {"changed": False, "name": args.name}
    run("ip", "netns", "add", args.name)
    for index, link in enumerate(args.links):
        address, bridge = link.rsplit("@", 1)
        # The outside end's name: the router's name with the link's number, inside the kernel's 15 bytes.
        outside = f"{args.name[:12]}-{index}"
        run("ip", "link", "add", outside, "type", "veth", "peer", "name", f"eth{index}", "netns", args.name)
        run("ip", "link", "set", outside, "master", bridge, "up")
        run("ip", "-n", args.name, "addr", "add", address, "dev", f"eth{index}")
        run("ip", "-n", args.name, "link", "set", f"eth{index}", "up")
    run("ip", "netns", "exec", args.name, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    return {"changed": True, "name": args.name}


def router_down(args) -> dict:
    """The router's namespace goes, and with it the inside ends of its veths, so the outside ones."""
    exists = os.path.exists(f"/run/netns/{args.name}")
    if exists:
        run("ip", "netns", "del", args.name)
    links = remove_links(f"{args.name[:12]}-")
    return {"changed": exists or bool(links), "name": args.name}


# -- venvs for the hosts' interpreters ------------------------------------------------------------

def requirements(path: str, floors: bool, python: str) -> list:
    """The requirements of a pip requirements file (comments and options aside) that apply to the
    interpreter ``python`` (environment markers evaluated for it); with ``floors``, each pinned to
    its lowest allowed version (``name>=1.2`` becomes ``name==1.2``)."""
    from packaging.requirements import Requirement  # the controller's venv has it (pip and ansible-core need it)

    version = run(python, "-c", "import platform; print(platform.python_version())").stdout.strip()
    environment = {"python_version": ".".join(version.split(".")[:2]), "python_full_version": version}
    wanted = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if not line or line.startswith("-"):
                continue
            requirement = Requirement(line)
            if requirement.marker is not None and not requirement.marker.evaluate(environment):
                continue
            if floors:
                lowest = [s.version for s in requirement.specifier if s.operator in (">=", "==")]
                if not lowest:
                    raise SystemExit(f"fleet.py: {path}: {line!r} states no lowest version (name>=X or name==X)")
                wanted.append(f"{requirement.name}=={lowest[0]}")
            else:
                wanted.append(f"{requirement.name}{requirement.specifier}")
    return wanted


def venv(args) -> dict:
    """A virtualenv of ``args.python`` with the requirements of ``args.file`` (their floors with
    ``--floors``), made once and reused while the interpreter and the requirements stay the same."""
    wanted = requirements(args.file, args.floors, args.python)
    python = os.path.join(args.dir, "bin", "python")
    # The interpreter, then what was installed: the venv is reused while both stay the same, and
    # the fleet scenario's verify checks the host's libraries against it.
    record_path = os.path.join(args.dir, "cnit-requirements.txt")
    record = "".join(f"{line}\n" for line in [os.path.realpath(args.python)] + wanted)
    try:
        with open(record_path, encoding="ascii") as handle:
            if handle.read() == record:
                return {"changed": False, "python": python, "requirements": wanted}
    except OSError:
        pass
    shutil.rmtree(args.dir, ignore_errors=True)
    run(args.python, "-m", "venv", args.dir)
    pip = subprocess.run([os.path.join(args.dir, "bin", "pip"), "install", "-q", "--disable-pip-version-check", *wanted],
                         capture_output=True, text=True, check=False)
    if pip.returncode != 0:
        shutil.rmtree(args.dir, ignore_errors=True)
        raise SystemExit(f"fleet.py: pip install {' '.join(wanted)} with {args.python} failed:\n{pip.stderr}")
    with open(record_path, "w", encoding="ascii") as out:
        out.write(record)
    return {"changed": True, "python": python, "requirements": wanted}


# -- Debian userlands for hosts of other releases -------------------------------------------------

# What a host's tree holds beyond debootstrap's minbase: sshd, sudo, Python with python3-apt (for
# Ansible's apt module), the tools the plugins and tests use, and what the plugins role's default
# mode installs (the libraries and the distribution's plugins), so that a converge needs no network.
TREE_PACKAGES = ("openssh-server", "sudo", "python3", "python3-apt", "iproute2", "iptables", "iputils-ping",
                 "python3-jsonschema", "python3-pyroute2", "containernetworking-plugins")
# What the role's virtualenv mode installs: downloaded into the tree's apt cache, not installed, so
# that the role's apt task installs them offline, as from a host's local mirror.
TREE_DOWNLOADED = ("python3-venv", "python3-packaging")


def debian_mirror() -> str:
    """The URI of the Debian mirror the machine's apt sources use for its own release, as
    ``debian_mirror`` of scripts/lib.sh finds it (the one place that reads the apt configuration)."""
    lib = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "scripts", "lib.sh")
    found = run("bash", "-c", 'source "$1" && debian_mirror', "fleet.py", lib, check=False)
    if found.returncode != 0 or not found.stdout.strip():
        raise SystemExit(f"fleet.py: {found.stderr.strip() or 'no Debian mirror found'}")
    return found.stdout.strip()


def tree_dir(root: str, suite: str) -> str:
    """Where the tree of ``suite`` lives: keyed by the suite and the package list, so that a change
    of either builds a new one."""
    key = hashlib.sha256(" ".join((suite,) + TREE_PACKAGES + ("+",) + TREE_DOWNLOADED).encode()).hexdigest()[:12]
    return os.path.join(root, f"{suite}-{key}")


def trees(args) -> dict:
    """Build the missing trees in parallel (about 70 s each), into a temporary directory renamed
    into place when debootstrap succeeded, so that a tree that exists is whole."""
    os.makedirs(args.dir, exist_ok=True)
    wanted = {suite: tree_dir(args.dir, suite) for suite in args.suites}
    missing = {suite: path for suite, path in wanted.items() if not os.path.isfile(os.path.join(path, "etc/debian_version"))}
    if missing:
        mirror = debian_mirror()
    builds = {}
    for suite, path in missing.items():
        shutil.rmtree(path + ".tmp", ignore_errors=True)
        log = open(path + ".log", "wb")  # pylint: disable=consider-using-with  # closed below, after wait()
        tmp = shlex.quote(path + ".tmp")
        build = (f"debootstrap --variant=minbase --include={','.join(TREE_PACKAGES)} {shlex.quote(suite)} {tmp} "
                 f"{shlex.quote(mirror)} && chroot {tmp} apt-get install -q -y --download-only {' '.join(TREE_DOWNLOADED)}")
        builds[suite] = (subprocess.Popen(  # pylint: disable=consider-using-with
            ["sh", "-ec", build], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT), log)
    failed = []
    for suite, (process, log) in builds.items():
        process.wait()
        log.close()
        if process.returncode == 0:
            os.rename(missing[suite] + ".tmp", missing[suite])
        else:
            failed.append(f"{suite} (see {missing[suite]}.log)")
    if failed:
        raise SystemExit(f"fleet.py: debootstrap failed: {', '.join(failed)}")
    return {"changed": bool(missing), "trees": wanted}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("up", "down"):
        command = commands.add_parser(name)
        command.add_argument("--work", required=True)
        command.add_argument("--prefix", required=True)
    commands.choices["up"].add_argument("--subnet", required=True, help="the test /24's first three octets")
    commands.choices["up"].add_argument("hosts", nargs="+", metavar="NAME=INDEX[:USER]")
    for name in ("router", "router-down"):
        command = commands.add_parser(name)
        command.add_argument("--name", required=True)
    commands.choices["router"].add_argument("links", nargs="+", metavar="ADDRESS/LEN@BRIDGE")
    command = commands.add_parser("venv")
    command.add_argument("dir")
    command.add_argument("python")
    command.add_argument("file", help="a pip requirements file")
    command.add_argument("--floors", action="store_true", help="install the lowest versions it allows")
    command = commands.add_parser("trees")
    command.add_argument("dir")
    command.add_argument("suites", nargs="+", metavar="SUITE")
    args = parser.parse_args()
    if args.command in ("up", "down"):
        args.work = os.path.abspath(args.work)
    if os.geteuid() != 0 and args.command != "venv":
        raise SystemExit("fleet.py: must run as root")
    if args.command.startswith("router") and not args.name.startswith("cnit-"):
        raise SystemExit(f"fleet.py: router name {args.name!r} must start with 'cnit-'")
    commands = {"up": up, "down": down, "router": router, "router-down": router_down, "venv": venv, "trees": trees}
    print(json.dumps(commands[args.command](args)))


if __name__ == "__main__":
    sys.exit(main())
