#!/usr/bin/env python3
"""Write server-log.txt: ordinary log lines with no credentials in them.

Run from the package root: python3 data/corpus/make_log.py
The seed is fixed, so the file is the same on every run. It holds what servers
print that looks random but is no secret: timestamps, UUIDs, SHA-256 digests,
git commit ids, URLs without credentials, base64 image data and JSON.
"""

import base64
import hashlib
import json
import pathlib
import random
import uuid

HERE = pathlib.Path(__file__).resolve().parent
RNG = random.Random(7)

SERVERS = ["github", "filesystem", "postgres", "browser", "search", "slack", "jira"]
TOOLS = ["read_file", "list_dir", "search_code", "get_issue", "query", "screenshot", "fetch"]
PATHS = ["src/lib.rs", "README.md", "docs/setup.md", "crates/host/src/main.rs", "package.json"]
HOSTS = ["api.github.com", "registry.npmjs.org", "example.com", "docs.rs", "crates.io"]
WORDS = ("the request was served from cache after the upstream answered slowly and the "
         "lane kept its budget while the stored copy was written to the spill file").split()


def hexs(n: int) -> str:
    return "".join(RNG.choice("0123456789abcdef") for _ in range(n))


def uid() -> str:
    return str(uuid.UUID(int=RNG.getrandbits(128), version=4))


def stamp(i: int) -> str:
    s = 1_780_000_000 + i * 7
    return f"2026-11-{1 + s % 28:02d}T{s % 24:02d}:{s % 60:02d}:{(s * 7) % 60:02d}.{s % 1000:03d}Z"


def sentence() -> str:
    return " ".join(RNG.choice(WORDS) for _ in range(RNG.randint(5, 14)))


def url() -> str:
    return (f"https://{RNG.choice(HOSTS)}/repos/mcpl/{RNG.choice(SERVERS)}/contents/"
            f"{RNG.choice(PATHS)}?ref={hexs(40)}&page={RNG.randint(1, 9)}")


def image() -> str:
    return base64.b64encode(RNG.randbytes(RNG.randint(600, 3000))).decode()


def line(i: int) -> str:
    kind = i % 9
    ts = stamp(i)
    if kind == 0:
        return (f"{ts} INFO mcpl_host::lanes request_id={uid()} server={RNG.choice(SERVERS)} "
                f"tool={RNG.choice(TOOLS)} duration_ms={RNG.randint(1, 9000)}")
    if kind == 1:
        return f"{ts} DEBUG mcpl_budget::spill wrote {RNG.randint(1, 99999)} bytes sha256={hexs(64)}"
    if kind == 2:
        return f"commit {hexs(40)}\nAuthor: Dev Person <dev@example.com>\nDate:   {ts}\n\n    {sentence()}\n"
    if kind == 3:
        return f'{ts} 127.0.0.1 - - "GET {url()} HTTP/1.1" 200 {RNG.randint(100, 99999)} "-" "mcpl/0.4"'
    if kind == 4:
        body = {"jsonrpc": "2.0", "id": i, "result": {"content": [
            {"type": "image", "mimeType": "image/png", "data": image()}]}}
        return json.dumps(body)
    if kind == 5:
        body = {"ts": ts, "level": "info", "msg": sentence(), "trace_id": hexs(32),
                "span_id": hexs(16), "etag": f'W/"{hexs(24)}"', "digest": f"sha256:{hexs(64)}",
                "session": uid(), "path": RNG.choice(PATHS)}
        return json.dumps(body)
    if kind == 6:
        data = RNG.randbytes(RNG.randint(20, 200))
        return (f"{ts} WARN mcpl_fetch retry={RNG.randint(1, 5)} url={url()} "
                f"integrity=sha512-{base64.b64encode(hashlib.sha512(data).digest()).decode()}")
    if kind == 7:
        return (f"{ts} INFO pod web-{hexs(10)}-{hexs(5)} image=ghcr.io/mcpl/host@sha256:{hexs(64)} "
                f"node=10.0.{RNG.randint(0, 255)}.{RNG.randint(1, 254)}")
    return f"{ts} INFO mcpl_classify {sentence()} (item {uid()}, {RNG.randint(1, 500)} blocks)"


def main() -> None:
    lines, size, i = [], 0, 0
    while size < 250_000:
        text = line(i)
        lines.append(text)
        size += len(text) + 1
        i += 1
    (HERE / "server-log.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
