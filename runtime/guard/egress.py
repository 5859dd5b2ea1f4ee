"""The filtering proxy sandboxed commands reach the network through, when the agent has ``network_allowed_domains``.

Claude Code's sandbox gives each command its own network namespace; the only way out is a bridge (``socat``) from
the sandbox to a TCP port on the host, and the CLI's ``sandbox.network.httpProxyPort`` / ``socksProxyPort`` name
that port. With this CLI build (2.1.330) the CLI's own proxy answered every request with an empty reply inside the
runtime's confinement, allowlisted or not, so the runtime runs this proxy instead and points both settings at it
(:func:`runtime.guard.sandbox.sandbox_settings`). What it lets through, and why:

- **exact names only**: the target must be a name on the allowlist (lower case, a trailing dot ignored); IP
  literals (``127.0.0.1``, ``[::ffff:127.0.0.1]``) and names that merely contain an allowed one
  (``127.0.0.1.nip.io``, ``example.org.evil``) are refused before any name is resolved. An entry ``name`` allows
  ports 80 and 443, ``name:port`` that port.
- **the name checked is the name used**: the proxy resolves the name itself (or takes its pinned address,
  ``AGENTKIT_NETWORK_HOSTS``) and connects to that address. A ``Host`` header or TLS SNI naming another host
  inside the tunnel reaches only the allowed host's server; a plain-HTTP request whose ``Host`` header differs
  from its URL, or that carries user info (``http://example.org@127.0.0.1/``), is refused.
- **no internal addresses**: when any address of an allowed name is loopback, link-local (``169.254.169.254``,
  the metadata service), private, shared (CGNAT), multicast, reserved or unspecified (IPv4-mapped IPv6 checked as
  IPv4), the request is refused, unless the address is inside ``AGENTKIT_NETWORK_ALLOWED_CIDRS``.
- HTTP ``CONNECT`` (HTTPS), absolute-form plain HTTP (``GET http://host/…``) and SOCKS5 ``CONNECT`` by name (the
  CLI sets ``ALL_PROXY`` to a SOCKS bridge); nothing else. A refusal is a ``403`` (SOCKS: "not allowed") with the
  reason, and one log line.

The proxy listens on ``127.0.0.1``; any local process may connect to it, and gets no more than a sandboxed command.
It runs on its own thread and event loop (:func:`shared_proxy`), one per runtime process and configuration.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from runtime.errors import ConfigurationError

logger = logging.getLogger(__name__)

#: Resolves ``(name, port)`` to IP address strings.
Resolver = Callable[[str, int], Awaitable[list[str]]]
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_PORTS = frozenset({80, 443})
MAX_HEAD = 64 * 1024
CONNECT_TIMEOUT_S = 10.0
#: Carrier-grade NAT space: not "private" for :mod:`ipaddress`, still never a public mirror.
_SHARED = ipaddress.ip_network("100.64.0.0/10")


def parse_allowlist(entries: Iterable[str]) -> dict[str, frozenset[int]]:
    """``name`` or ``name:port`` entries → name → allowed ports. Raises :class:`ConfigurationError` for a wildcard,
    an IP literal, user info, a path or a bad port (the allowlist holds exact host names)."""
    allowed: dict[str, set[int]] = {}
    for raw in entries:
        entry = raw.strip().lower()
        name, _, port_text = entry.partition(":") if entry.count(":") == 1 else (entry, "", "")
        name = name.rstrip(".")
        problem = _name_problem(name)
        if problem is None and port_text and not (port_text.isdigit() and 0 < int(port_text) < 65536):
            problem = "the port must be 1-65535"
        if problem:
            raise ConfigurationError(
                f"network_allowed_domains: {raw!r}: {problem} (write exact host names, e.g. 'pypi.internal' or "
                "'pypi.internal:8443')"
            )
        allowed.setdefault(name, set()).update({int(port_text)} if port_text else DEFAULT_PORTS)
    return {name: frozenset(ports) for name, ports in allowed.items()}


def _name_problem(name: str) -> str | None:
    if not name or len(name) > 253:
        return "empty or too long"
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(name)
        return "an IP address, not a host name"
    labels = name.split(".")
    if any(not label or len(label) > 63 for label in labels):
        return "not a host name"
    if any(not all(c.isalnum() or c in "-_" for c in label) for label in labels):
        return "only letters, digits, '-', '_' and dots (no wildcards, user info, paths or brackets)"
    return None


def parse_pins(text: str | None) -> dict[str, str]:
    """``name=ip,name=ip`` → name → address (validated)."""
    pins: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        name, sep, address = item.partition("=")
        try:
            if not sep:
                raise ValueError("expected name=address")
            pins[name.strip().lower().rstrip(".")] = str(ipaddress.ip_address(address.strip()))
        except ValueError as exc:
            raise ConfigurationError(f"AGENTKIT_NETWORK_HOSTS: {item!r}: {exc}") from exc
    return pins


def parse_networks(text: str | None) -> tuple[IPNetwork, ...]:
    """``cidr,cidr`` → networks (validated)."""
    try:
        return tuple(
            ipaddress.ip_network(part.strip(), strict=False)
            for part in (text or "").split(",")
            if part.strip()
        )
    except ValueError as exc:
        raise ConfigurationError(f"AGENTKIT_NETWORK_ALLOWED_CIDRS: {exc}") from exc


def internal(address: IPAddress) -> bool:
    """Loopback, link-local, private, shared, multicast, reserved or unspecified (IPv4-mapped IPv6 as IPv4)."""
    if isinstance(address, ipaddress.IPv6Address):
        mapped = address.ipv4_mapped or address.sixtofour
        if mapped is not None:
            address = mapped
    return (
        address.is_loopback
        or address.is_link_local
        or address.is_private
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or (isinstance(address, ipaddress.IPv4Address) and address in _SHARED)
    )


async def system_resolver(name: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(name, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class Refused(Exception):
    """The request is not allowed; the message says why (sent to the client and logged)."""


@dataclass
class EgressProxy:
    """See the module docstring. ``resolver`` is injectable (tests map names without DNS)."""

    allow: Mapping[str, frozenset[int]]
    pins: Mapping[str, str] = field(default_factory=dict)
    allowed_networks: tuple[IPNetwork, ...] = ()
    resolver: Resolver = system_resolver
    connect_timeout_s: float = CONNECT_TIMEOUT_S
    refused: list[str] = field(default_factory=list)
    """Reasons of the refusals so far (newest last, at most 1000): diagnostics and tests."""

    async def target(self, host: str, port: int) -> str:
        """The address to connect to for ``host:port``; raises :class:`Refused`."""
        name = host.strip().lower().rstrip(".")
        ports = self.allow.get(name)
        if ports is None:
            raise Refused(f"{host!r} is not on the allowlist")
        if port not in ports:
            raise Refused(f"port {port} of {name} is not allowed (allowed: {sorted(ports)})")
        try:
            addresses = [self.pins[name]] if name in self.pins else await self.resolver(name, port)
        except OSError as exc:
            raise Refused(f"{name} does not resolve: {exc}") from exc
        if not addresses:
            raise Refused(f"{name} does not resolve")
        for text in addresses:
            address = ipaddress.ip_address(text.split("%", 1)[0])
            if internal(address) and not any(address in net for net in self.allowed_networks):
                raise Refused(f"{name} resolves to the internal address {address}")
        return addresses[0]

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            first = await reader.readexactly(1)
            if first == b"\x05":
                await self._socks(reader, writer)
            else:
                await self._http(first, reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            writer.close()

    def _refuse(self, reason: str) -> None:
        logger.info("egress refused: %s", reason)
        self.refused.append(reason)
        del self.refused[:-1000]

    async def _open(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        address = await self.target(host, port)
        try:
            return await asyncio.wait_for(asyncio.open_connection(address, port), self.connect_timeout_s)
        except (TimeoutError, OSError) as exc:
            raise ConnectionRefusedError(f"{host}:{port} ({address}): {exc}") from exc

    async def _http(self, first: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = first + await reader.readuntil(b"\r\n\r\n")
        if len(head) > MAX_HEAD:
            raise ValueError("head too long")
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = ([*lines[0].split(" "), "", "", ""])[:3]
        headers = [line for line in lines[1:] if line]
        host_header = next(
            (h.split(":", 1)[1].strip() for h in headers if h.lower().startswith("host:")), None
        )
        try:
            if method == "CONNECT":
                host, port = _authority(target, None)
                if host_header is not None and _authority(host_header, port) != (host, port):
                    raise Refused(f"Host header {host_header!r} differs from the CONNECT target {target!r}")
                up_reader, up_writer = await self._open(host, port)
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                url = urlsplit(target)
                if url.scheme != "http" or not url.netloc:
                    raise Refused(
                        f"only CONNECT and absolute http:// URLs go through this proxy, not {target!r}"
                    )
                if "@" in url.netloc:
                    raise Refused(f"user info in the URL {target!r}")
                host, port = _authority(url.netloc, 80)
                if host_header is None or _authority(host_header, 80) != (host, port):
                    raise Refused(f"Host header {host_header!r} differs from the URL {target!r}")
                up_reader, up_writer = await self._open(host, port)
                path = url.path or "/"
                kept = [h for h in headers if not h.lower().startswith(("proxy-", "connection:"))]
                request = [f"{method} {path}{'?' + url.query if url.query else ''} {version}", *kept]
                up_writer.write(("\r\n".join([*request, "Connection: close"]) + "\r\n\r\n").encode("latin-1"))
        except Refused as exc:
            self._refuse(str(exc))
            writer.write(_status(403, f"refused by the sandbox's egress proxy: {exc}"))
            await writer.drain()
            return
        except ConnectionRefusedError as exc:
            writer.write(_status(502, f"cannot connect: {exc}"))
            await writer.drain()
            return
        await _pipe(reader, writer, up_reader, up_writer)

    async def _socks(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        count = (await reader.readexactly(1))[0]
        methods = await reader.readexactly(count)
        if 0 not in methods:
            writer.write(b"\x05\xff")
            return
        writer.write(b"\x05\x00")
        version, command, _, kind = await reader.readexactly(4)
        if kind == 3:
            host = (await reader.readexactly((await reader.readexactly(1))[0])).decode("latin-1")
        else:
            raw = await reader.readexactly(4 if kind == 1 else 16 if kind == 4 else 0)
            host = str(ipaddress.ip_address(raw)) if raw else "?"
        port = int.from_bytes(await reader.readexactly(2), "big")
        try:
            if version != 5 or command != 1:
                raise Refused("only SOCKS5 CONNECT is supported")
            up_reader, up_writer = await self._open(host, port)
        except Refused as exc:
            self._refuse(f"SOCKS: {exc}")
            writer.write(b"\x05\x02\x00\x01" + bytes(6))  # 0x02: connection not allowed by ruleset
            return
        except ConnectionRefusedError:
            writer.write(b"\x05\x05\x00\x01" + bytes(6))
            return
        writer.write(b"\x05\x00\x00\x01" + bytes(6))
        await _pipe(reader, writer, up_reader, up_writer)


def _authority(text: str, default_port: int | None) -> tuple[str, int]:
    """``host:port`` / ``[v6]:port`` → (lower-case host without a trailing dot, port)."""
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    if not port_text:
        if default_port is None:
            raise Refused(f"no port in {text!r}")
        return host.lower().rstrip("."), default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise Refused(f"bad port in {text!r}")
    return host.lower().rstrip("."), int(port_text)


def _status(code: int, reason: str) -> bytes:
    body = (reason + "\n").encode()
    title = {403: "Forbidden", 502: "Bad Gateway"}[code]
    return (
        f"HTTP/1.1 {code} {title}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode() + body


async def _pipe(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(OSError, RuntimeError):
                dst.write_eof() if dst.can_write_eof() else dst.close()

    try:
        await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))
    finally:
        up_writer.close()


@dataclass
class RunningProxy:
    proxy: EgressProxy
    port: int
    loop: asyncio.AbstractEventLoop


_running: dict[tuple[object, ...], RunningProxy] = {}
_lock = threading.Lock()


def shared_proxy(
    allow: Mapping[str, frozenset[int]], pins: Mapping[str, str], networks: tuple[IPNetwork, ...]
) -> RunningProxy:
    """The process's proxy for this configuration, started on first use on a daemon thread (``127.0.0.1``, a free
    port). Raises ``OSError`` when it cannot listen."""
    key = (tuple(sorted(allow.items())), tuple(sorted(pins.items())), networks)
    with _lock:
        running = _running.get(key)
        if running is not None:
            return running
        proxy = EgressProxy(allow=dict(allow), pins=dict(pins), allowed_networks=networks)
        # its own loop on its own thread: the caller may be on a running loop (build_options is), and the proxy
        # must outlive any one request's loop
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="egress-proxy", daemon=True).start()
        started = asyncio.run_coroutine_threadsafe(asyncio.start_server(proxy.handle, "127.0.0.1", 0), loop)
        try:
            server = started.result(timeout=10)
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            raise
        port = int(server.sockets[0].getsockname()[1])
        running = _running[key] = RunningProxy(proxy, port, loop)
        logger.info("egress proxy for sandboxed commands on 127.0.0.1:%d, allowing %s", port, sorted(allow))
        return running
