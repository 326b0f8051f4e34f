"""Drive `mcp-gateway --http` replicas with the official Python MCP SDK over Streamable HTTP.

Usage: http_session.py URL [URL...]   (the /mcp URLs of running replicas)

Every HTTP request the SDK makes goes to the next replica in turn (a round-robin balancer
inside the HTTP client), so one session spans every replica.
- SDK 2.x speaks 2026-07-28: no initialize, no Mcp-Session-Id, per-request `_meta`.
- SDK 1.x speaks 2025-11-25: initialize, Mcp-Session-Id (state shared through Redis),
  ping, logging/setLevel, resources/subscribe.
The same tools, resources and results either way. Exits 0 when everything holds.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import sys
import time
from urllib.parse import urlsplit

SDK_MAJOR = int(importlib.metadata.version("mcp").split(".")[0])
if SDK_MAJOR >= 2:
    import httpx2 as httpx
else:
    import httpx

import mcp.types as types

sys.path.insert(0, __import__("os").path.dirname(__file__))
from stdio_session import ALL_TOOLS, READ_ONLY, UNKNOWN_ID, text_json  # noqa: E402


class RoundRobin(httpx.AsyncBaseTransport):
    """Sends each request to the next replica; remembers what it sent."""

    def __init__(self, urls: list[str]) -> None:
        self.hosts = [urlsplit(u).netloc for u in urls]
        self.inner = httpx.AsyncHTTPTransport()
        self.n = 0
        self.sent: list[tuple[str, str, dict[str, str]]] = []

    async def handle_async_request(self, request):
        host = self.hosts[self.n % len(self.hosts)]
        self.n += 1
        request.url = request.url.copy_with(netloc=host.encode())
        request.headers["host"] = host
        self.sent.append((host, request.method, {k.lower(): v for k, v in request.headers.items()}))
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


PHONE = "62813" + str(int(time.time() * 1000))[-8:]
SUCCESSES = [
    ("explain_error", {"code": "131047"}),
    ("check_compliance", {"customer_id": PHONE, "message_type": "service"}),
    ("check_conversation", {"customer_id": PHONE}),
    ("get_customer_context", {"customer_id": PHONE}),
    ("list_templates", {"limit": 5, "status_filter": "approved"}),
    ("estimate_cost", {"message_type": "marketing", "recipient_country": "BR", "quantity": 4}),
]
FAILURES = [
    ("get_delivery_status", {"message_id": UNKNOWN_ID}, "NOT_FOUND"),
    ("check_compliance", {"message_type": "service"}, "INVALID_ARGUMENT"),
    ("send_message", {"to": PHONE, "text": "hello"}, "TEMPLATE_REQUIRED"),
]


async def same_session(call_tool, list_tools, list_resources, read_resource) -> dict:
    """The checks both revisions share; returns check_compliance's result."""
    listed = await list_tools()
    tools = {t.name: t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools}
    assert set(tools) == ALL_TOOLS, sorted(set(tools) ^ ALL_TOOLS)
    for name, tool in tools.items():
        ro = (tool.get("annotations") or {}).get("readOnlyHint")
        assert (ro is True) == (name in READ_ONLY), f"{name} readOnlyHint={ro}"
    results = {}
    for name, args in SUCCESSES:
        res = await call_tool(name, args)
        assert not res.isError if hasattr(res, "isError") else not res.is_error, f"{name}: {res}"
        structured = getattr(res, "structuredContent", None) if SDK_MAJOR < 2 else res.structured_content
        assert isinstance(structured, dict), name
        assert text_json(res) == structured, name
        results[name] = structured
    assert results["estimate_cost"]["total_estimated_cost"] == "0.2500", results["estimate_cost"]
    for name, args, code in FAILURES:
        res = await call_tool(name, args)
        is_error = res.isError if SDK_MAJOR < 2 else res.is_error
        structured = (res.structuredContent if SDK_MAJOR < 2 else res.structured_content) or {}
        assert is_error is True, f"{name}: {res}"
        assert structured.get("error", {}).get("code") == code, f"{name}: {structured}"
    resources = await list_resources()
    uris = {str(r.uri) for r in resources.resources}
    assert "warden://inbox" in uris, uris
    inbox = await read_resource("warden://inbox")
    assert inbox.contents and json.loads(inbox.contents[0].text) is not None
    return results["check_compliance"]


async def modern(urls: list[str]) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    rr = RoundRobin(urls)
    http = httpx.AsyncClient(transport=rr, timeout=60)
    async with Client(streamable_http_client(urls[0], http_client=http), mode="auto") as client:
        compliance = await same_session(client.call_tool, client.list_tools, client.list_resources, client.read_resource)
    await http.aclose()
    posts = [h for (_, m, h) in rr.sent if m == "POST"]
    assert posts and all(h.get("mcp-protocol-version") == "2026-07-28" for h in posts[1:]), [
        h.get("mcp-protocol-version") for h in posts]
    assert not any("mcp-session-id" in h for h in posts), "a 2026-07-28 client sent Mcp-Session-Id"
    assert any(h.get("mcp-method") == "tools/call" and h.get("mcp-name") for h in posts), "standard headers"
    assert len({host for (host, _, _) in rr.sent}) == len(urls), "not every replica was used"
    print(f"http 2026-07-28 session over {len(urls)} replicas: ok ({len(posts)} requests; "
          f"check_compliance can_send={compliance.get('can_send')})")


async def legacy(urls: list[str]) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    rr = RoundRobin(urls)

    def factory(headers=None, timeout=None, auth=None):
        return httpx.AsyncClient(transport=rr, headers=headers, timeout=timeout, auth=auth)

    async with streamablehttp_client(urls[0], httpx_client_factory=factory) as (read, write, session_id):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.protocolVersion == "2025-11-25", init.protocolVersion
            assert session_id(), "no Mcp-Session-Id"
            await session.send_ping()
            await session.set_logging_level("warning")
            await session.subscribe_resource("warden://inbox")
            compliance = await same_session(session.call_tool, session.list_tools, session.list_resources,
                                            session.read_resource)
            await session.send_ping()
            await session.unsubscribe_resource("warden://inbox")
    posts = [(host, h) for (host, m, h) in rr.sent if m == "POST"]
    with_session = [host for host, h in posts if "mcp-session-id" in h]
    assert len(set(with_session)) == len(urls), f"the session did not reach every replica: {set(with_session)}"
    print(f"http 2025-11-25 session over {len(urls)} replicas: ok ({len(posts)} requests; "
          f"check_compliance can_send={compliance.get('can_send')})")


def main() -> None:
    urls = sys.argv[1:]
    assert urls, __doc__
    asyncio.run(modern(urls) if SDK_MAJOR >= 2 else legacy(urls))


if __name__ == "__main__":
    main()
