"""The sandbox's egress proxy (runtime.guard.egress) on loopback, names mapped by an injected resolver (no DNS)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from runtime.config.settings import Settings
from runtime.errors import ConfigurationError
from runtime.guard.egress import EgressProxy, Refused, parse_allowlist, parse_networks, parse_pins

pytestmark = pytest.mark.anyio

MIRROR_BODY = b"mirror says hi"


def resolver_for(table: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    async def resolve(name: str, port: int) -> list[str]:
        if name not in table:
            raise OSError(f"unknown name {name}")
        return table[name]

    return resolve


async def _origin(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    ORIGIN_HEADS.append(head)
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(MIRROR_BODY))
    writer.write(MIRROR_BODY)
    await writer.drain()
    writer.close()


ORIGIN_HEADS: list[bytes] = []


@pytest.fixture
async def origin() -> AsyncIterator[int]:
    ORIGIN_HEADS.clear()
    server = await asyncio.start_server(_origin, "127.0.0.2", 0)
    yield int(server.sockets[0].getsockname()[1])
    server.close()


def make_proxy(port: int, table: dict[str, list[str]], **kw: object) -> EgressProxy:
    allow = parse_allowlist([f"mirror.test:{port}", f"evil.test:{port}", f"mixed.test:{port}", "meta.test"])
    return EgressProxy(allow=allow, resolver=resolver_for(table), **kw)  # type: ignore[arg-type]


async def exchange(proxy: EgressProxy, request: bytes) -> bytes:
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        return data
    finally:
        server.close()


async def test_allowlisted_name_mapped_to_an_allowed_internal_range_goes_through(origin: int) -> None:
    proxy = make_proxy(
        origin, {"mirror.test": ["127.0.0.2"]}, allowed_networks=parse_networks("127.0.0.2/32")
    )
    answer = await exchange(
        proxy, f"GET http://mirror.test:{origin}/p HTTP/1.1\r\nHost: mirror.test:{origin}\r\n\r\n".encode()
    )
    assert answer.endswith(MIRROR_BODY) and b"200 OK" in answer
    assert ORIGIN_HEADS[0].startswith(b"GET /p HTTP/1.1")  # origin-form towards the server
    tunnel = await exchange(
        proxy, f"CONNECT mirror.test:{origin} HTTP/1.1\r\n\r\nGET /t HTTP/1.1\r\n\r\n".encode()
    )
    assert b"200 Connection established" in tunnel and tunnel.endswith(MIRROR_BODY)


@pytest.mark.parametrize(
    ("name", "addresses", "why"),
    [
        ("evil.test", ["127.0.0.1"], "loopback"),
        ("evil.test", ["::1"], "IPv6 loopback"),
        ("evil.test", ["::ffff:127.0.0.1"], "IPv4-mapped loopback"),
        ("evil.test", ["169.254.169.254"], "link-local (metadata)"),
        ("evil.test", ["fe80::1%eth0"], "IPv6 link-local with a zone"),
        ("evil.test", ["10.0.0.5"], "private"),
        ("evil.test", ["100.64.0.1"], "shared (CGNAT)"),
        ("evil.test", ["224.0.0.1"], "multicast"),
        ("evil.test", ["0.0.0.0"], "unspecified"),
        ("evil.test", ["2002:7f00:1::"], "6to4 of loopback"),
        ("mixed.test", ["93.184.215.14", "127.0.0.1"], "one public, one loopback"),
        ("mirror.test", ["127.0.0.1"], "an allowed name outside the allowed internal range"),
    ],
)
async def test_allowlisted_names_resolving_inside_are_refused(
    name: str, addresses: list[str], why: str
) -> None:
    proxy = make_proxy(1234, {name: addresses}, allowed_networks=parse_networks("127.0.0.2/32"))
    with pytest.raises(Refused, match="internal address"):
        await proxy.target(name, 1234)


async def test_pins_are_checked_like_resolved_addresses() -> None:
    proxy = make_proxy(1234, {}, pins=parse_pins("evil.test=127.0.0.1,meta.test=169.254.169.254"))
    with pytest.raises(Refused, match=r"internal address 127\.0\.0\.1"):
        await proxy.target("evil.test", 1234)
    with pytest.raises(Refused, match=r"169\.254\.169\.254"):
        await proxy.target("meta.test", 80)


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"CONNECT 127.0.0.1:1234 HTTP/1.1\r\n\r\n",
        b"CONNECT [::ffff:127.0.0.1]:1234 HTTP/1.1\r\n\r\n",
        b"CONNECT 127.0.0.1.nip.io:1234 HTTP/1.1\r\n\r\n",
        b"CONNECT mirror.test.evil:1234 HTTP/1.1\r\n\r\n",
        b"CONNECT example.org@127.0.0.1:1234 HTTP/1.1\r\n\r\n",
        b"CONNECT mirror.test:1234 HTTP/1.1\r\nHost: 127.0.0.1:1234\r\n\r\n",
        b"CONNECT mirror.test:9999 HTTP/1.1\r\n\r\n",
        b"GET http://example.org@127.0.0.1:1234/ HTTP/1.1\r\nHost: example.org\r\n\r\n",
        b"GET http://mirror.test:1234/ HTTP/1.1\r\nHost: 127.0.0.1:1234\r\n\r\n",
        b"GET http://mirror.test:1234/ HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: mirror.test:1234\r\n\r\n",
        b"GET https://mirror.test:1234/ HTTP/1.1\r\nHost: mirror.test:1234\r\n\r\n",
    ],
)
async def test_tricks_get_403_and_nothing_is_resolved(request_bytes: bytes) -> None:
    looked_up: list[str] = []

    async def resolve(name: str, port: int) -> list[str]:
        looked_up.append(name)
        return ["93.184.215.14"]

    proxy = EgressProxy(allow=parse_allowlist(["mirror.test:1234"]), resolver=resolve)
    answer = await exchange(proxy, request_bytes)
    assert answer.startswith(b"HTTP/1.1 403 "), answer
    assert looked_up == [] and len(proxy.refused) == 1


async def test_socks_by_address_is_refused_and_by_allowed_name_connects(origin: int) -> None:
    proxy = make_proxy(
        origin, {"mirror.test": ["127.0.0.2"]}, allowed_networks=parse_networks("127.0.0.2/32")
    )
    by_address = b"\x05\x01\x00" + b"\x05\x01\x00\x01" + bytes([127, 0, 0, 2]) + origin.to_bytes(2, "big")
    assert (await exchange(proxy, by_address))[2:4] == b"\x05\x02"
    name = b"mirror.test"
    by_name = b"\x05\x01\x00" + b"\x05\x01\x00\x03" + bytes([len(name)]) + name + origin.to_bytes(2, "big")
    answer = await exchange(proxy, by_name + b"GET / HTTP/1.1\r\n\r\n")
    assert answer[2:4] == b"\x05\x00" and answer.endswith(MIRROR_BODY)


@pytest.mark.parametrize(
    "entry", ["*.example.org", "10.0.0.1", "[::1]", "a@b", "x/y", "host:0", "host:99999", ""]
)
def test_allowlist_entries_must_be_exact_names(entry: str) -> None:
    with pytest.raises(ConfigurationError, match="network_allowed_domains"):
        parse_allowlist([entry])


def test_settings_refuse_bad_pins_and_ranges() -> None:
    with pytest.raises(ConfigurationError, match="AGENTKIT_NETWORK_HOSTS"):
        Settings.from_env({"AGENTKIT_NETWORK_HOSTS": "mirror.test=not-an-ip"})
    with pytest.raises(ConfigurationError, match="AGENTKIT_NETWORK_ALLOWED_CIDRS"):
        Settings.from_env({"AGENTKIT_NETWORK_ALLOWED_CIDRS": "10.0.0.0/33"})
