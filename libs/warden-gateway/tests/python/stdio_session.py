"""Drive the built mcp-gateway over stdio with the official Python MCP SDK.

Usage: stdio_session.py <path to mcp-gateway>   (configuration comes from the environment;
EXPECT_MCP_NAME / EXPECT_MCP_VERSION are the server info to expect)

1. An SDK session (its own protocol version): initialize, tools/list, successful calls
   validated by the SDK against each tool's outputSchema, failing calls in the error
   envelope. The gateway's stdout is teed to a file on the way to the SDK, and every line
   of it must be a JSON-RPC message.
2. A raw session at protocol 2025-06-18, newline-delimited JSON by hand, same check.
3. Live updates (when WEBHOOK_URL and WEBHOOK_SECRET name a running webhook): resources
   listed, resources/subscribe to the inbox and a conversation, a signed inbound webhook
   POST, notifications/resources/updated for both; after unsubscribe, only the inbox.

Exits 0 when everything holds; prints what failed otherwise.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
import warnings

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ALL_TOOLS = {
    "check_compliance", "send_message", "send_template", "explain_error", "check_conversation",
    "check_frequency_cap", "get_customer_context", "get_delivery_status", "get_rate_limit",
    "list_conversations", "list_templates", "reply_customer", "retry_failed_messages",
    "sync_template_status", "schedule_message", "schedule_campaign", "cancel_campaign",
    "pause_campaign", "get_account_quality", "estimate_cost", "estimate_pricing",
    "create_template", "sync_webhooks", "archive_chat", "get_campaign", "resume_campaign",
    "get_conversation_history", "list_inbox", "mark_as_read",
    "send_media", "upload_media", "send_interactive", "send_location", "send_contacts", "react_to_message", "get_media",
    "get_spend", "list_senders", "resume_sender",
    "hand_off_conversation", "release_conversation", "preview_campaign",
    "get_flow_responses", "list_flows",
}
READ_ONLY = {
    "check_compliance", "explain_error", "check_conversation", "check_frequency_cap",
    "get_customer_context", "get_delivery_status", "get_rate_limit", "list_conversations",
    "list_templates", "estimate_cost", "estimate_pricing", "get_campaign", "get_media",
    "get_conversation_history", "list_inbox", "get_account_quality", "get_spend",
    "list_senders", "preview_campaign", "get_flow_responses", "list_flows",
}
UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"


def is_jsonrpc(msg) -> bool:
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return False
    if "method" in msg:
        return isinstance(msg["method"], str)
    return "id" in msg and (("result" in msg) != ("error" in msg))


def check_stdout_lines(lines: list[bytes], label: str) -> None:
    assert lines, f"{label}: no stdout at all"
    bad = []
    for line in lines:
        text = line.decode("utf-8", "replace").rstrip("\r\n")
        try:
            ok = is_jsonrpc(json.loads(text))
        except ValueError:
            ok = False
        if not ok:
            bad.append(text[:200])
    assert not bad, f"{label}: {len(bad)} stdout line(s) are not JSON-RPC, e.g. {bad[:3]}"


def text_json(result: types.CallToolResult):
    texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
    assert len(texts) == 1, f"expected one text block, got {result.content!r}"
    return json.loads(texts[0])


async def sdk_session(binary: str, env: dict[str, str], tee_path: str) -> None:
    command = f"{shlex.quote(binary)} | tee {shlex.quote(tee_path)}"
    params = StdioServerParameters(command="/bin/sh", args=["-c", command], env=env)
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                assert init.server_info.name == env["EXPECT_MCP_NAME"], init.server_info
                assert init.server_info.version == env["EXPECT_MCP_VERSION"], init.server_info

                listed = await session.list_tools()
                tools = {t.name: t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools}
                assert set(tools) == ALL_TOOLS, sorted(set(tools) ^ ALL_TOOLS)
                for name, tool in tools.items():
                    assert tool["inputSchema"]["type"] == "object", name
                    assert tool.get("outputSchema", {}).get("type") == "object", name
                    ro = (tool.get("annotations") or {}).get("readOnlyHint")
                    assert (ro is True) == (name in READ_ONLY), f"{name} readOnlyHint={ro}"

                # Successful calls: the SDK validates structuredContent against outputSchema.
                phone = "62812" + str(int(time.time() * 1000))[-8:]
                successes = [
                    ("explain_error", {"code": "131047"}),
                    ("check_compliance", {"customer_id": phone, "message_type": "service"}),
                    ("check_conversation", {"customer_id": phone}),
                    ("check_frequency_cap", {"customer_id": phone}),
                    ("get_customer_context", {"customer_id": phone}),
                    ("get_rate_limit", {}),
                    ("list_conversations", {"limit": 5}),
                    ("list_templates", {"limit": 5, "status_filter": "approved"}),
                    ("estimate_cost", {"message_type": "marketing", "recipient_country": "BR", "quantity": 4}),
                    ("estimate_pricing", {"conversation_type": "utility", "recipient_country": "GB"}),
                ]
                for name, args in successes:
                    res = await session.call_tool(name, args)
                    assert not res.is_error, f"{name}: {res}"
                    assert isinstance(res.structured_content, dict), name
                    assert text_json(res) == res.structured_content, name
                cost = (await session.call_tool("estimate_cost", {"message_type": "marketing", "recipient_country": "BR", "quantity": 4})).structured_content
                assert cost["total_estimated_cost"] == "0.2500", cost

                # Failures: isError with the envelope, never a JSON-RPC error.
                failures = [
                    ("get_delivery_status", {"message_id": UNKNOWN_ID}, "NOT_FOUND"),
                    ("get_delivery_status", {"message_id": "x"}, "INVALID_ARGUMENT"),
                    ("check_compliance", {"message_type": "service"}, "INVALID_ARGUMENT"),
                    ("send_message", {"to": phone, "text": "hello"}, "TEMPLATE_REQUIRED"),
                    ("reply_customer", {"customer_id": phone, "message_text": "hello"}, "WINDOW_CLOSED"),
                    ("list_templates", {"limit": 501}, "INVALID_ARGUMENT"),
                    ("archive_chat", {}, "INVALID_ARGUMENT"),
                    ("get_campaign", {"campaign_id": UNKNOWN_ID}, "NOT_FOUND"),
                ]
                for name, args, code in failures:
                    res = await session.call_tool(name, args)
                    assert res.is_error is True, f"{name}: {res}"
                    err = (res.structured_content or {}).get("error") or {}
                    assert err.get("code") == code, f"{name}: {res.structured_content}"
                    assert err.get("message") and err.get("suggested_action"), err
                    assert text_json(res) == res.structured_content, name


def raw_session(binary: str, env: dict[str, str]) -> None:
    proc = subprocess.Popen([binary], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    lines: list[bytes] = []

    def send(obj) -> None:
        proc.stdin.write((json.dumps(obj) + "\n").encode())
        proc.stdin.flush()

    def await_id(i: int) -> dict:
        while True:
            line = proc.stdout.readline()
            assert line, f"stdout closed before the answer to {i}"
            lines.append(line)
            msg = json.loads(line)
            if msg.get("id") == i and "method" not in msg:
                return msg

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    init = await_id(1)
    assert init["result"]["protocolVersion"] == "2025-06-18", init
    assert init["result"]["serverInfo"]["name"] == env["EXPECT_MCP_NAME"], init
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    assert len(await_id(2)["result"]["tools"]) == len(ALL_TOOLS)
    send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_templates", "arguments": {"limit": "3"}}})
    res = await_id(3)["result"]
    assert res["isError"] is False and res["structuredContent"]["limit"] == 3, res
    send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "check_compliance", "arguments": {"customer_id": "not-a-phone", "message_type": "service"}}})
    res = await_id(4)["result"]
    assert res["isError"] is True and res["structuredContent"]["error"]["code"] == "INVALID_ARGUMENT", res
    time.sleep(0.3)
    proc.stdin.close()
    rest = proc.stdout.read()  # until the gateway closes stdout on exit
    lines.extend(l for l in rest.splitlines(keepends=True) if l)
    assert proc.wait(timeout=15) == 0, f"exit status {proc.returncode}"
    check_stdout_lines(lines, "raw session")


def post_inbound(url: str, secret: str, phone_number_id: str, sender: str, text: str) -> float:
    """POST a signed inbound text webhook; returns the monotonic time the 200 arrived."""
    now = int(time.time())
    body = json.dumps({"object": "whatsapp_business_account", "entry": [{"id": "200000000000777", "time": now,
        "changes": [{"field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550100000", "phone_number_id": phone_number_id},
            "contacts": [{"profile": {"name": "Py"}, "wa_id": sender}],
            "messages": [{"from": sender, "id": f"wamid.PY{uuid.uuid4().hex}", "timestamp": str(now),
                          "type": "text", "text": {"body": text}}]}}]}]}).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "X-Hub-Signature-256": signature})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200, f"webhook answered {resp.status}"
        return time.monotonic()


async def live_session(binary: str, env: dict[str, str]) -> None:
    url, secret = env["WEBHOOK_URL"], env["WEBHOOK_SECRET"]
    phone_number_id = env["PLATFORM_PHONE_NUMBER_ID"]
    updates: asyncio.Queue = asyncio.Queue()

    async def on_message(message) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.put_nowait((str(message.params.uri), time.monotonic()))

    async def next_update(what: str) -> tuple[str, float]:
        try:
            return await asyncio.wait_for(updates.get(), timeout=10)
        except asyncio.TimeoutError:
            raise AssertionError(f"no notifications/resources/updated within 10 s: {what}") from None

    def customer() -> str:
        return "6281" + str(uuid.uuid4().int % 10**9).zfill(9)

    params = StdioServerParameters(command=binary, env=env)
    with open(os.devnull, "w") as errlog, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # resources/subscribe is the 2025-11-25 way, on purpose
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, message_handler=on_message) as session:
                init = await session.initialize()
                caps = init.capabilities.resources
                assert caps is not None and caps.subscribe, f"resources capability: {caps!r}"
                listed = [str(r.uri) for r in (await session.list_resources()).resources]
                assert listed == ["warden://inbox"], listed
                templates = [t.uri_template for t in (await session.list_resource_templates()).resource_templates]
                assert templates == ["warden://conversations/{customer_id}"], templates

                ana, ben = customer(), customer()
                conv = f"warden://conversations/{ana}"
                await session.subscribe_resource("warden://inbox")
                await session.subscribe_resource(conv)
                at = await asyncio.to_thread(post_inbound, url, secret, phone_number_id, ana, "hello")
                got = [await next_update("after the inbound message"), await next_update("after the inbound message")]
                assert sorted(u for u, _ in got) == [conv, "warden://inbox"], got
                latency = max(0.0, max(t for _, t in got) - at)
                print(f"live updates: webhook 200 -> notification {latency * 1000:.1f} ms")
                read = await session.read_resource(conv)
                history = json.loads(read.contents[0].text)
                assert history["messages"][0]["text"] == "hello", history
                inbox = json.loads((await session.read_resource("warden://inbox")).contents[0].text)
                assert ana in [i["customer_id"] for i in inbox["items"]], inbox

                await session.unsubscribe_resource(conv)
                await asyncio.to_thread(post_inbound, url, secret, phone_number_id, ana, "again")
                await asyncio.to_thread(post_inbound, url, secret, phone_number_id, ben, "me too")
                after = [(await next_update("inbox after unsubscribe"))[0],
                         (await next_update("inbox after unsubscribe"))[0]]
                assert after == ["warden://inbox", "warden://inbox"], after
                assert updates.empty(), f"unexpected updates after unsubscribe: {updates!r}"


def main() -> int:
    binary = sys.argv[1]
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        tee_path = os.path.join(tmp, "stdout.log")
        asyncio.run(sdk_session(binary, env, tee_path))
        with open(tee_path, "rb") as f:
            check_stdout_lines(f.read().splitlines(keepends=True), "SDK session")
    raw_session(binary, env)
    if env.get("WEBHOOK_URL"):
        asyncio.run(live_session(binary, env))
    else:
        print("live updates: skipped (no WEBHOOK_URL)")
    print("stdio session: ok")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as exc:
        print(f"stdio session FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
