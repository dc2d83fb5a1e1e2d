"""A stdio MCP server for cli/tests/cli/toolset.rs. With `big N`, it offers N tools whose
descriptions are long (about 2,000 characters each). Else it offers `once`, which leaves the
tool list when called (and says so with notifications/tools/list_changed), and `stay`.
A call answers with the tool's name.
"""
import json
import sys

BIG = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[1] == "big" else 0
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
    if method == "initialize":
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
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        result = {"content": [{"type": "text", "text": "called " + name}]}
    else:
        send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": method}})
        continue
    send({"jsonrpc": "2.0", "id": message["id"], "result": result})
