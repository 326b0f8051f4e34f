"""A conversation a person holds, seen by an agent over the official Python MCP SDK.

Usage: held_session.py <path to mcp-gateway>   (configuration from the environment, with
WEBHOOK_URL / WEBHOOK_SECRET naming a running webhook server)

1. A customer writes (a signed inbound webhook); a person answers from the WhatsApp
   Business app (a signed smb_message_echoes webhook).
2. Over an SDK session (results validated against each tool's outputSchema):
   check_conversation shows holder human by business_app; the history shows the echo as
   an outbound message sent_by business_app; reply_customer is refused CONVERSATION_HELD,
   and the answer is an instruction an LLM can follow: the suggested action names the
   holder and says not to reply, to wait, or to ask an operator to release it.

Exits 0 when everything holds; prints what failed otherwise.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import sys
import time
import urllib.request
import uuid

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def post(url: str, secret: str, field: str, value: dict) -> None:
    """POST one signed change to the webhook server."""
    now = int(time.time())
    body = json.dumps({"object": "whatsapp_business_account", "entry": [{
        "id": "200000000000777", "time": now, "changes": [{"field": field, "value": value}]}]}).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "X-Hub-Signature-256": signature})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200, f"webhook answered {resp.status}"


async def session(binary: str, env: dict[str, str]) -> None:
    url, secret = env["WEBHOOK_URL"], env["WEBHOOK_SECRET"]
    metadata = {"display_phone_number": "15550100000", "phone_number_id": env["PLATFORM_PHONE_NUMBER_ID"]}
    customer = "6281" + str(uuid.uuid4().int % 10**9).zfill(9)
    now = str(int(time.time()))
    post(url, secret, "messages", {
        "messaging_product": "whatsapp", "metadata": metadata,
        "contacts": [{"profile": {"name": "Py"}, "wa_id": customer}],
        "messages": [{"from": customer, "id": f"wamid.PY{uuid.uuid4().hex}", "timestamp": now,
                      "type": "text", "text": {"body": "where is my order?"}}]})
    echo_id = f"wamid.ECHO{uuid.uuid4().hex}"
    post(url, secret, "smb_message_echoes", {
        "messaging_product": "whatsapp", "metadata": metadata,
        "message_echoes": [{"from": "15550100000", "to": customer, "id": echo_id, "timestamp": now,
                            "type": "text", "text": {"body": "Hi, this is Ana from the shop"}}]})

    params = StdioServerParameters(command=binary, env=env)
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                deadline = time.monotonic() + 15
                while True:
                    res = await s.call_tool("check_conversation", {"customer_id": customer})
                    assert not res.is_error, res
                    holder = res.structured_content["holder"]
                    if holder["kind"] == "human":
                        break
                    assert time.monotonic() < deadline, f"holder never became human: {holder}"
                    await asyncio.sleep(0.2)
                assert holder["by"] == "business_app", holder
                assert holder["since"] and holder["until"], holder

                history = await s.call_tool("get_conversation_history", {"customer_id": customer})
                assert not history.is_error, history
                page = history.structured_content
                assert page["holder"]["kind"] == "human", page["holder"]
                echo = [m for m in page["messages"] if m.get("wamid") == echo_id]
                assert echo and echo[0]["direction"] == "outbound", page["messages"]
                assert echo[0]["sent_by"] == "business_app", echo[0]

                res = await s.call_tool("reply_customer", {"customer_id": customer,
                                                           "message_text": "How can I help?"})
                assert res.is_error is True, res
                err = res.structured_content["error"]
                assert err["code"] == "CONVERSATION_HELD", err
                action = err["suggested_action"]
                for words in ("held by human", "Do not reply", "Wait", "operator", "release_conversation"):
                    assert words in action, f"{words!r} not in suggested_action: {action}"
                assert "since" in err["message"] and "human" in err["message"], err
                print(f"held answer: {err['code']}: {action}")


def main() -> int:
    asyncio.run(session(sys.argv[1], dict(os.environ)))
    print("held session: ok")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as exc:
        print(f"held session FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
