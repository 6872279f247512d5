# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cluster scenario's echo: ``serve PORT`` answers every TCP connection (IPv4 or IPv6) with
the address it came from, as the receiving namespace sees it; ``probe PORT ADDRESS...`` connects to each address
and prints a JSON object: address -> the source address the server saw, or the error.

Runs under each host's own Python (3.9 to 3.13), from the standard library only."""

import json
import socket
import socketserver
import sys
import threading


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.sendall(self.client_address[0].encode() + b"\n")


class EchoServer6(socketserver.ThreadingTCPServer):
    """IPv6 only, so that an IPv4 client is seen by the IPv4 server with its own address (not as
    ::ffff:a.b.c.d)."""

    address_family = socket.AF_INET6

    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        super().server_bind()


def serve(port: int) -> None:
    """On the port in both families, each in a thread of its own."""
    socketserver.ThreadingTCPServer.allow_reuse_address = True
    servers = [socketserver.ThreadingTCPServer(("0.0.0.0", port), Echo), EchoServer6(("::", port), Echo)]
    threads = [threading.Thread(target=server.serve_forever) for server in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def probe(port: int, addresses: list) -> dict:
    seen = {}
    for address in addresses:
        try:
            with socket.create_connection((address, port), timeout=3) as connection:
                seen[address] = connection.makefile().readline().strip()
        except OSError as error:
            seen[address] = f"error: {error}"
    return seen


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    else:
        print(json.dumps(probe(int(sys.argv[2]), sys.argv[3:])))
