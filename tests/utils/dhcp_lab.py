"""A DHCP server and the dhcp plugin's daemon, as the real-binary tests run them.

``DhcpServer``: Debian's dnsmasq in a namespace of its own, plugged into a bridge the test made by
a veth pair; it answers on that bridge only (no DNS, no route out) and keeps its lease file, log
and pid file in the test's directory. ``DhcpDaemon``: ``dhcp daemon`` of a plugin release as a
plain process (the way a host without systemd runs it), listening on a socket in the test's
directory, never on /run/cni/dhcp.sock. Both are stopped by ``stop()``, which tests call in
teardown."""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import subprocess
import time
from pathlib import Path


def _run(*argv: str) -> None:
    subprocess.run(argv, capture_output=True, text=True, check=True)


def _wait_for(predicate, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {timeout} s")
        time.sleep(0.05)


def _stop_process(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def socket_accepts(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


class _Background:
    """A process a test started, with its log file."""

    log_file: Path
    process: subprocess.Popen | None = None

    def log(self) -> str:
        return self.log_file.read_text() if self.log_file.exists() else ""

    def stop(self) -> None:
        if self.process is not None:
            _stop_process(self.process)
            self.process = None


class DhcpServer(_Background):
    """dnsmasq serving ``subnet`` (its first address is the server's; leases from the 50th to
    the 99th) on ``bridge`` from the namespace ``netns``, for ``lease_seconds``."""

    def __init__(self, workdir: Path, netns: str, bridge: str, veth: str, subnet: str,
                 lease_seconds: int = 600):
        self.workdir, self.netns, self.bridge, self.veth = workdir, netns, bridge, veth
        network = ipaddress.ip_network(subnet)
        self.address = network.network_address + 1
        self.range = (network.network_address + 50, network.network_address + 99)
        self.prefixlen = network.prefixlen
        self.lease_file = workdir / "dnsmasq.leases"
        self.log_file = workdir / "dnsmasq.log"
        self.lease_seconds = lease_seconds
        self.process: subprocess.Popen | None = None

    def start(self) -> DhcpServer:
        _run("ip", "netns", "add", self.netns)
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        _run("ip", "link", "set", self.bridge, "up")
        _run("ip", "link", "add", self.veth, "type", "veth", "peer", "name", "eth0", "netns", self.netns)
        _run("ip", "link", "set", self.veth, "master", self.bridge, "up")
        _run("ip", "-n", self.netns, "addr", "add", f"{self.address}/{self.prefixlen}", "dev", "eth0")
        _run("ip", "-n", self.netns, "link", "set", "eth0", "up")
        _run("ip", "-n", self.netns, "link", "set", "lo", "up")
        self.lease_file.write_text("")
        first, last = self.range
        self.process = subprocess.Popen(
            ["ip", "netns", "exec", self.netns, "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null",
             "--port=0", "--no-resolv", "--no-hosts", "--interface=eth0", "--bind-interfaces",
             f"--dhcp-range={first},{last},{self.lease_seconds}s", "--dhcp-authoritative",
             f"--dhcp-leasefile={self.lease_file}",
             f"--pid-file={self.workdir / 'dnsmasq.pid'}", "--log-dhcp", f"--log-facility={self.log_file}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        _wait_for(lambda: self.log_file.exists() and "DHCP, IP range" in self.log_file.read_text()
                  or self.process.poll() is not None, "dnsmasq's start")
        if self.process.poll() is not None:
            raise RuntimeError(f"dnsmasq did not start: {self.process.stderr.read()}")
        return self

    def in_range(self, address: str) -> bool:
        first, last = self.range
        return first <= ipaddress.ip_address(address) <= last

    def leases(self) -> dict:
        """``address -> client id`` of the leases dnsmasq holds (its lease file: expiry, MAC,
        address, host name, client id)."""
        lines = self.lease_file.read_text().splitlines()
        return {fields[2]: fields[4] for fields in (line.split() for line in lines) if len(fields) >= 5}


class DhcpDaemon(_Background):
    """``<plugin_dir>/dhcp daemon`` listening on ``socket_path``; its log (stderr) in
    ``workdir``."""

    def __init__(self, plugin_dir: str, workdir: Path, socket_path: str):
        self.binary = os.path.join(plugin_dir, "dhcp")
        self.socket_path = socket_path
        self.log_file = workdir / "dhcp-daemon.log"
        self.pid_file = workdir / "dhcp-daemon.pid"
        self.process: subprocess.Popen | None = None

    def start(self) -> DhcpDaemon:
        if os.path.exists(self.socket_path):  # a socket left by a daemon that was killed
            os.unlink(self.socket_path)
        with open(self.log_file, "a", encoding="utf-8") as log:
            self.process = subprocess.Popen(
                [self.binary, "daemon", "-socketpath", self.socket_path, "-pidfile", str(self.pid_file),
                 "-timeout", "5s"], stdout=log, stderr=subprocess.STDOUT)
        _wait_for(lambda: socket_accepts(self.socket_path) or self.process.poll() is not None, "the dhcp daemon's start")
        if self.process.poll() is not None:
            raise RuntimeError(f"the dhcp daemon did not start: {self.log()}")
        return self
