"""A stdio MCP server for cli/tests/cli/toolset.rs. With `big N`, it offers N tools whose
descriptions are long (about 2,000 characters each). Else it offers `once`, which leaves the
tool list when called (and says so with notifications/tools/list_changed), and `stay`.
A call answers with the tool's name. With `stateless`, it speaks revision 2026-07-28 (no
initialize) and sends list_changed only on a subscriptions/listen subscription that asked for it.
"""
import json
import sys

BIG = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[1] == "big" else 0
STATELESS = sys.argv[1:2] == ["stateless"]
SUBSCRIPTION = None
if BIG:
    TOOLS = [
        {
            "name": "tool%d" % n,
            "description": ("Reads the weather of city number %d. " % n) + "filler " * 280,
            "inputSchema": {"type": "object", "properties": {"day": {"type": "string"}}},
        }
        for n in range(BIG)
    ]
else:
    TOOLS = [{"name": name, "inputSchema": {"type": "object"}} for name in ["once", "stay"]]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message.get("method")
    if STATELESS and method == "server/discover":
        result = {
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "changing", "version": "1"},
            "resultType": "complete",
        }
    elif STATELESS and method == "subscriptions/listen":
        if message["params"]["notifications"].get("toolsListChanged") is True:
            SUBSCRIPTION = message["id"]
        meta = {"io.modelcontextprotocol/subscriptionId": message["id"]}
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"_meta": meta, "notifications": {"toolsListChanged": True}}})
        continue
    elif method == "initialize" and not STATELESS:
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "changing", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        name = message["params"]["name"]
        if name == "once":
            TOOLS = [tool for tool in TOOLS if tool["name"] != "once"]
            if not STATELESS:
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            elif SUBSCRIPTION is not None:
                meta = {"io.modelcontextprotocol/subscriptionId": SUBSCRIPTION}
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                      "params": {"_meta": meta}})
        result = {"content": [{"type": "text", "text": "called " + name}]}
    else:
        send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": method}})
        continue
    send({"jsonrpc": "2.0", "id": message["id"], "result": result})
