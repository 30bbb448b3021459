"""Who is on the other end of a loopback TCP connection: the uid that owns the client's socket,
from /proc/net/tcp and /proc/net/tcp6 (Linux; readable by every user). 127.0.0.1 keeps the
network out, not the machine's other users, so ``tuimon serve`` answers only our own uid, as
the control socket does with SO_PEERCRED (docs/serve.md)."""

from __future__ import annotations

import ipaddress
import sys
from pathlib import Path

TABLES = ("/proc/net/tcp", "/proc/net/tcp6")


class Unknown(Exception):
    """The tables cannot be read here (not Linux): the check cannot be made."""


def is_loopback(ip: str) -> bool:
    try:
        return ipaddress.ip_address(normal((ip, 0))[0]).is_loopback
    except ValueError:
        return False


def normal(address: tuple) -> tuple[str, int]:
    """(ip, port) with an IPv4-mapped IPv6 address as plain IPv4, as the tables are compared."""
    ip = ipaddress.ip_address(str(address[0]).split("%")[0])
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return str(ip), int(address[1])


def _parse(field: str) -> tuple[str, int]:
    """'0100007F:1F40' -> ('127.0.0.1', 8000): the kernel prints each 32-bit word of the address
    in host byte order."""
    host, port = field.split(":")
    raw = bytes.fromhex(host)
    if sys.byteorder == "little":
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return normal((ipaddress.ip_address(raw), int(port, 16)))


def owner(client: tuple, server: tuple, tables: tuple[str, ...] = TABLES) -> int | None:
    """The uid of the socket whose local end is ``client`` and remote end ``server`` (both as a
    peername / sockname gives them); None when no such socket is listed (it is not on this
    machine, or it closed). Unknown when no table can be read."""
    want = (normal(client), normal(server))
    readable = False
    for table in tables:
        try:
            lines = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        readable = True
        for line in lines:
            fields = line.split()
            if len(fields) > 7 and (_parse(fields[1]), _parse(fields[2])) == want:
                return int(fields[7])
    if not readable:
        raise Unknown("no /proc/net/tcp")
    return None
