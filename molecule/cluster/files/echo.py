# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cluster scenario's echo: ``serve PORT`` answers every TCP connection with the address it
came from, as the receiving namespace sees it; ``probe PORT ADDRESS...`` connects to each address
and prints a JSON object: address -> the source address the server saw, or the error.

Runs under each host's own Python (3.9 to 3.13), from the standard library only."""

import json
import socket
import socketserver
import sys


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.sendall(self.client_address[0].encode() + b"\n")


def serve(port: int) -> None:
    socketserver.ThreadingTCPServer.allow_reuse_address = True
    with socketserver.ThreadingTCPServer(("0.0.0.0", port), Echo) as server:
        server.serve_forever()


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
