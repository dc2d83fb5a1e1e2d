"""A stdio MCP server of 200 tools whose definitions no provider takes as they are, for
cli/tests/cli/run.rs: `ref` has a bare `$ref` schema, `wordy` a description of 3000 characters,
and `t0` ... `t197` are plain. A call answers with the arguments it got, as JSON text.
"""
import json
import sys

TOOLS = [
    {
        "name": "ref",
        "description": "Takes a point.",
        "inputSchema": {
            "$ref": "#/$defs/Point",
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}},
                                "required": ["x"]}},
        },
    },
    {"name": "wordy", "description": "word " * 600, "inputSchema": {"type": "object"}},
] + [{"name": "t%d" % n, "inputSchema": {"type": "object"}} for n in range(198)]


def answer(request_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        answer(message["id"], {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "many", "version": "1"},
        })
    elif method == "tools/list":
        answer(message["id"], {"tools": TOOLS})
    elif method == "tools/call":
        arguments = message["params"].get("arguments")
        answer(message["id"], {"content": [{"type": "text", "text": json.dumps(arguments)}]})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                     "error": {"code": -32601, "message": method}}) + "\n")
        sys.stdout.flush()
