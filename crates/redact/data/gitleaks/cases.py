#!/usr/bin/env python3
"""Extract gitleaks' per-rule examples into cases.json.

Run from the package root:
    python3 data/gitleaks/cases.py /path/to/gitleaks/cmd/generate/config/rules

Each rule's Go file lists true positives (`tps`) and false positives (`fps`).
They are Go expressions: literals, `+`, `append`, `fmt.Sprintf`, and calls that
make random secrets from a regex (`secrets.NewSecret`). This script evaluates
that small part of Go, makes the random parts with a fixed seed, and leaves out
what it cannot evaluate. A rule with no positive gets one made from its own
regex; a rule with no negative gets a near miss made from its regex (every run of
eight or more one character short), or one written by hand in HAND_NEGATIVES
where that is still a finding.
"""

import json
import pathlib
import random
import re
import re._constants as C
import re._parser as P
import string
import sys

HERE = pathlib.Path(__file__).resolve().parent
RNG = random.Random(20261202)
PRINTABLE = [c for c in string.printable if c not in " \t\n\r\x0b\x0c"]

# Negatives written by hand where a rule has no gitleaks false positive and its
# lowest-entropy string is still a finding: each is a near miss of the rule.
HAND_NEGATIVES: dict[str, str] = {
    # Its parts have no fixed length, so a shorter one still matches; cut the last part.
    "slack-app-token": "xapp-1-A052FGTS2DL-5171572773297",
}

# Positives written by hand where gitleaks makes its own with Go code this
# script does not run: the jwt.io sample token, base64-encoded.
HAND_POSITIVES: dict[str, str] = {
    "jwt-base64": "jwt: ZXlKaGJHY2lPaUpJVXpJMU5pSXNJblI1Y0NJNklrcFhWQ0o5LmV5SnpkV0lpT2lJeE1qTTBOVFkzT0Rrd0lpd2libUZ0WlNJNklrcHZhRzRnUkc5bElpd2lhV0YwSWpveE5URTJNak01TURJeWZRLlNmbEt4d1JKU01lS0tGMlFUNGZ3cE1lSmYzNlBPazZ5SlZfYWRRc3N3NWM=",
}


# ---- a regex generator over Python's parser, for Go patterns ----

POSIX = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "digit": "0-9", "word": "a-zA-Z0-9_",
    "upper": "A-Z", "lower": "a-z", "xdigit": "0-9a-fA-F", "space": " \\t",
    "punct": "!-/:-@\\[-`{-~",
}


def python_pattern(go: str) -> str:
    """Go syntax that Python's parser reads differently, rewritten."""
    go = go.replace("(?i)", "")
    go = re.sub(r"\[:(\w+):\]", lambda m: POSIX[m.group(1)], go)
    return go.replace("\\z", "\\Z")


def members(items, negate: bool) -> list[str]:
    chars = set()
    for op, av in items:
        if op is C.LITERAL:
            chars.add(chr(av))
        elif op is C.RANGE:
            chars.update(chr(c) for c in range(av[0], av[1] + 1) if c < 128)
        elif op is C.CATEGORY:
            chars.update({
                C.CATEGORY_DIGIT: string.digits,
                C.CATEGORY_WORD: string.ascii_letters + string.digits + "_",
                C.CATEGORY_SPACE: " ",
            }.get(av, ""))
    if negate:
        return [c for c in PRINTABLE if c not in chars]
    return sorted(chars)


def generate(pattern: str, short: bool = False) -> str:
    """One string the pattern matches, with random characters from each class.

    With short, every repetition of eight or more is one shorter: a near miss.
    """
    def pick(chars: list[str]) -> str:
        return RNG.choice(chars) if chars else ""

    def walk(sub) -> str:
        out = []
        for op, av in sub:
            if op is C.LITERAL:
                out.append(chr(av))
            elif op is C.NOT_LITERAL:
                out.append(pick([c for c in PRINTABLE if ord(c) != av]))
            elif op is C.ANY:
                out.append(pick(PRINTABLE))
            elif op is C.IN:
                negate = bool(av) and av[0][0] is C.NEGATE
                out.append(pick(members(av[1:] if negate else av, negate)))
            elif op is C.BRANCH:
                out.append(walk(av[1][0]))
            elif op is C.SUBPATTERN:
                out.append(walk(av[3]))
            elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
                lo, _hi, body = av
                if short and lo >= 8:
                    lo -= 1
                out.append("".join(walk(body) for _ in range(lo)))
            elif op is C.ATOMIC_GROUP:
                out.append(walk(av))
        return "".join(out)

    return walk(P.parse(python_pattern(pattern)))


# ---- a tokenizer and evaluator for the Go that lists the examples ----

TOKEN = re.compile(
    r"(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<raw>`[^`]*`)|(?P<str>\"(?:\\.|[^\"\\\n])*\")"
    r"|(?P<rune>'(?:\\.|[^'\\])')|(?P<nl>\n)|(?P<ws>[ \t\r]+)"
    r"|(?P<name>[A-Za-z_][\w.]*)|(?P<num>\d+)|(?P<op>\.\.\.|:=|[^\s\w])",
    re.S,
)


def tokens(src: str) -> list[tuple[str, str]]:
    out = []
    for m in TOKEN.finditer(src):
        kind = m.lastgroup
        if kind in ("comment", "ws"):
            continue
        text = m.group()
        if kind == "raw":
            out.append(("str", text[1:-1].replace("\r", "")))
        elif kind == "str":
            out.append(("str", json.loads(go_escapes(text))))
        else:
            out.append((kind, text))
    return out


def go_escapes(lit: str) -> str:
    """A Go interpreted string literal as a JSON string literal."""
    def one(m):
        e = m.group(1)
        if e[0] == "x":
            return "\\u00" + e[1:]
        if e[0] in "abfv":
            return "\\u%04x" % {"a": 7, "b": 8, "f": 12, "v": 11}[e[0]]
        if e[0] == "'":
            return "'"
        return "\\" + e
    return re.sub(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)", one, lit)


class Unknown(Exception):
    """An expression this evaluator does not handle."""


SAMPLE_FORMS = ['{i}_token: "{s}"', '{i}Token = "{s}"', '{{\n    "{i}_token": "{s}"\n}}']

CALLS = {
    "utils.Numeric": lambda n: f"[0-9]{{{n}}}",
    "utils.Hex": lambda n: f"[a-f0-9]{{{n}}}",
    "utils.AlphaNumeric": lambda n: f"[a-z0-9]{{{n}}}",
    "utils.AlphaNumericExtendedShort": lambda n: f"[a-z0-9_-]{{{n}}}",
    "utils.AlphaNumericExtended": lambda n: f"[a-z0-9=_\\-]{{{n}}}",
    "utils.AlphaNumericExtendedLong": lambda n: f"[a-z0-9\\/=_\\+\\-]{{{n}}}",
    "utils.Hex8_4_4_4_12": lambda: "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "secrets.NewSecret": generate,
    "newPlausibleSecret": lambda r: plausible(r),
    "utils.GenerateSampleSecret": lambda i, s: f'{i}_api_token = "{s}"',
    "utils.GenerateSampleSecrets": lambda i, s: [f.format(i=i, s=s) for f in SAMPLE_FORMS],
    "strings.Repeat": lambda s, n: s * int(n),
    "strings.ToUpper": str.upper,
    "strings.ToLower": str.lower,
}


def plausible(regex: str) -> str:
    """As gitleaks' newPlausibleSecret: a generated secret with a digit from 1 to 9."""
    for _ in range(100):
        s = generate(regex)
        if re.search("[1-9]", s):
            return s
    raise Unknown("no plausible secret")


def sprintf(fmt: str, *args) -> str:
    args = list(args)
    return re.sub(r"%[sdq]", lambda m: str(args.pop(0)), fmt)


class Parser:
    def __init__(self, toks, env):
        self.t, self.i, self.env = toks, 0, env

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else ("eof", "")

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def skip_nl(self):
        while self.peek()[0] == "nl":
            self.i += 1

    def expect(self, text):
        self.skip_nl()
        if self.take()[1] != text:
            raise Unknown(f"expected {text}")

    def expr(self):
        value = self.operand()
        while self.peek()[1] == "+":
            self.take()
            self.skip_nl()
            right = self.operand()
            if not (isinstance(value, str) and isinstance(right, str)):
                raise Unknown("+ of non-strings")
            value += right
        return value

    def items(self, close):
        """Comma-separated expressions up to `close`; unknown ones are left out."""
        out = []
        while True:
            self.skip_nl()
            if self.peek()[1] == close:
                self.take()
                return out
            start = self.i
            try:
                out.append(self.expr())
                if self.peek()[1] == ":":
                    # A map literal's key is a file path; only its value is an example.
                    self.take()
                    out[-1] = {"path": out[-1], "text": self.expr()}
                if self.peek()[1] == "...":
                    self.take()
                    out[-1] = ("spread", out[-1])
            except Unknown:
                self.i = start
                self.skip_item(close)
                out.append(None)
            self.skip_nl()
            if self.peek()[1] == ",":
                self.take()

    def skip_item(self, close):
        depth = 0
        while True:
            kind, text = self.peek()
            if kind == "eof":
                raise Unknown("eof")
            if depth == 0 and text in (",", close):
                return
            if text in "([{":
                depth += 1
            elif text in ")]}":
                depth -= 1
            self.take()

    def operand(self):
        self.skip_nl()
        kind, text = self.take()
        if kind == "str":
            return text
        if kind == "num":
            return text
        if text == "[":
            self.expect("]")
            if self.take()[1] != "string":
                raise Unknown("slice type")
            self.expect("{")
            return flatten(self.items("}"))
        if text == "map":
            while self.take()[1] != "{":
                pass
            return [v for v in self.items("}") if v is not None]
        if kind == "name":
            if self.peek()[1] == "(":
                self.take()
                args = self.items(")")
                return self.call(text, args)
            if text in self.env:
                return self.env[text]
        raise Unknown(text)

    def call(self, name, args):
        if name == "append":
            return flatten(args)
        if any(a is None or isinstance(a, tuple) for a in args):
            raise Unknown("argument")
        if name == "fmt.Sprintf":
            return sprintf(*args)
        if name in CALLS:
            return CALLS[name](*args)
        raise Unknown(name)


def flatten(items) -> list:
    out = []
    for it in items:
        if isinstance(it, tuple):
            out.extend(it[1] if isinstance(it[1], list) else [None])
        elif isinstance(it, list):
            out.extend(it)
        else:
            out.append(it)
    return out


def examples(src: str) -> dict[str, dict]:
    """Each rule id in one Go file with the examples its function lists."""
    found = {}
    for fn in re.split(r"\nfunc ", src)[1:]:
        rid = re.search(r'RuleID:\s*"([^"]+)"', fn)
        if not rid:
            continue
        toks = tokens(fn)
        env = {}
        for i, (kind, text) in enumerate(toks):
            if kind != "name" or i == 0 or toks[i - 1][0] not in ("nl",):
                continue
            nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
            if nxt not in (":=", "="):
                continue
            p = Parser(toks, env)
            p.i = i + 2
            try:
                env[text] = p.expr()
            except (Unknown, IndexError, KeyError, ValueError):
                if text in ("tps", "fps"):
                    env.setdefault(text, [])
        found[rid.group(1)] = {
            k: [v for v in env.get(k, []) if isinstance(v, (str, dict))] for k in ("tps", "fps")
        }
    return found


def main() -> None:
    rules_dir = pathlib.Path(sys.argv[1])
    listed = {}
    for go in sorted(rules_dir.glob("*.go")):
        listed.update(examples(go.read_text()))
    rules = json.loads((HERE / "rules.json").read_text())["rules"]
    cases = {}
    made = {"generatedPositive": [], "handPositive": [], "generatedNegative": [], "handNegative": []}
    for r in rules:
        rid = r["id"]
        got = listed.get(rid, {"tps": [], "fps": []})
        path = re.compile(python_pattern(r["path"] or ""))
        # A path rule's false positive may be one only for its path, which text lacks.
        fps = [f if isinstance(f, str) else f["text"] for f in got["fps"]
               if isinstance(f, str) or path.search(f["path"])]
        tps = [t if isinstance(t, str) else t["text"] for t in got["tps"]]
        if not tps and rid in HAND_POSITIVES:
            tps = [HAND_POSITIVES[rid]]
            made["handPositive"].append(rid)
        elif not tps:
            tps = [generate(r["regex"])]
            made["generatedPositive"].append(rid)
        if not fps and rid in HAND_NEGATIVES:
            fps = [HAND_NEGATIVES[rid]]
            made["handNegative"].append(rid)
        elif not fps:
            # A near miss: the rule's own shape with every long run one character short.
            fps = [generate(r["regex"], short=True)]
            made["generatedNegative"].append(rid)
        cases[rid] = {"positives": tps, "negatives": fps}
    out = {"made": made, "cases": cases}
    (HERE / "cases.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} rules;", ", ".join(f"{k} {len(v)}" for k, v in made.items()))


if __name__ == "__main__":
    main()
