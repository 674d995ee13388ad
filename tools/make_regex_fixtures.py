#!/usr/bin/env python3
"""Regexes and texts classified by xgrammar (vLLM's default structured-output backend): the
reference the C++ test (tests/structured/regex_fixture_test.cc) compares ctxpar's regex automata
with.

- "regex": structured_outputs {"regex": pattern}. `accept` is xgrammar's
  Grammar.from_regex(pattern) on the raw text; for the few patterns in Python's syntax that
  xgrammar refuses (`z{,2}`, named groups, a literal `{`), Python's re.fullmatch with DOTALL
  (`reference` says which).
- "pattern": a JSON schema string's "pattern". `json` is the text between the quotes as
  json.dumps(s, ensure_ascii=False) writes s; `accept` is xgrammar's from_regex(pattern) on s
  (the same reference as "regex": ctxpar matches the decoded string and writes it canonically;
  byte_dfa.h says where xgrammar differs).
- "format": a JSON schema string's "format". `accept` is xgrammar's from_json_schema(
  {"type": "string", "format": f}) on the whole JSON string.

Texts are drawn from each pattern's parse tree (matches), then mutated (near misses), plus
random texts over the pattern's characters.

    python3 -m venv /tmp/xg && /tmp/xg/bin/pip install xgrammar==0.2.9
    /tmp/xg/bin/python tools/make_regex_fixtures.py > tests/fixtures/structured/regex_cases.json

Deterministic for a given --seed and xgrammar version (see the output's "generator" field).
"""
import argparse
import importlib.metadata
import json
import random
import re
import sys

import xgrammar as xgr
from xgrammar.testing import _is_grammar_accept_string as accepts

try:
    from re import _parser as sre_parse  # Python >= 3.11
    from re import _constants as sre_c
except ImportError:  # pragma: no cover
    import sre_parse
    import sre_constants as sre_c

# xgrammar's class meanings (regex_parser.h).
DIGITS = "0123456789"
WORD = DIGITS + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
SPACES = "\t\n\v\f\r \xa0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
EXTRA = ["\"", "\\", "\n", "\x01", "\u00e9", "\u4e2d", "\U0001F600", " ", "-", "."]

HAND_PATTERNS = [
    r"abc", r"a|b|cd", r"(ab)*c", r"a+b?", r"[a-c]{2,4}", r"x{3}", r"y{2,}", r"z{,2}",
    r"\d+(\.\d+)?", r"\w+@\w+\.com", r"\s*hello\s*", r"[^abc]+", r"[^\d\s]{1,3}",
    r"^start.*end$", r"(?:foo|bar)+baz", r"(?P<n>[0-9]{2})-(?P<m>[a-z]+)", r"a{1,3}?b*?",
    r"[\]\-a]+", r"[-a]b", r"[a-]c", r"\.\*\+\?\(\)\[\]\{\}\|\\\^\$", r"\x41\u00e9\U0001F600",
    r"[\x00-\x1f]+", r"\"[^\"\\]*\"", r"(a|)b", r"a{0}b", r"[\u4e00-\u9fff]{1,2}", r".{3}",
    r"\D\W\S", r"(true|false|null)", r"-?(0|[1-9][0-9]*)", r"[A-Z][a-z]+( [A-Z][a-z]+)*",
    r"a{2}{", r"{x}", r"a{,}", r"[\b]", r"\t\n\r\f\v", r"(((a)))", r"(a|b)*abb",
    r"[\s\S]{0,4}", r"\\[nt]", r"\"", r"", r"a|", r"\u00e9+", r"[é-ë]+",
]

FORMAT_EXAMPLES = {
    "date": ["2024-02-29", "1999-12-31", "0000-01-01", "2024-13-01", "2024-00-10"],
    "time": ["12:34:56Z", "23:59:60.123+05:30", "00:00:00-00:00", "24:00:00Z", "12:34:56"],
    "date-time": ["2024-01-01T00:00:00Z", "2024-06-30T23:59:59.5+01:00",
                  "2024-01-01 00:00:00Z", "2024-01-01T00:00:00"],
    "duration": ["P1D", "P3Y6M4DT12H30M5S", "PT20M", "P2W", "P1M2D", "PT1H1S", "P", "PT"],
    "email": ["a@b", "first.last@example.com", "\"john doe\"@ex-ample.org", "x@a.bc",
              "a..b@c", "@x", "a@-b", "user+tag@sub.domain.io"],
    "hostname": ["example.com", "a", "a-b.c0", "-a.com", "a..b", "xn--bcher-kva.example"],
    "ipv4": ["192.168.0.1", "255.255.255.255", "0.0.0.0", "256.1.1.1", "1.2.3", "01.2.3.4"],
    "ipv6": ["::", "::1", "2001:db8::8a2e:370:7334", "fe80::1:2:3:4", "1:2:3:4:5:6:7:8",
             "::ffff:192.168.0.1", "1:2:3:4::1.2.3.4", "1::2::3", "12345::"],
    "uuid": ["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-42661417400G",
             "123e4567e89b12d3a456426614174000"],
    "uri": ["https://example.com/a/b?c=d#e", "mailto:a@b.c", "urn:isbn:0451450523",
            "http://user:pw@host:8080/p%20q", "file:///etc/hosts", "no-scheme", "a:b c"],
    "uri-reference": ["/a/b", "../x?y#z", "", "//host/path", "a:b", "%zz", "#frag"],
    "uri-template": ["/users/{id}", "{+path}/here", "{?q,lang}", "/x{/a,b*}", "{a:30}", "{",
                     "http://example.com/{var}"],
    "json-pointer": ["", "/a/b", "/a~0b/c~1d", "/~2", "a/b", "/\"quoted\"/é"],
    "relative-json-pointer": ["0", "1/a", "2#", "01", "0/a~1b", "-1"],
}


def draw(tree, rng, depth=0):
    """A random text the parsed pattern matches (xgrammar's class meanings)."""
    out = []
    for op, av in tree:
        if op == sre_c.LITERAL:
            out.append(chr(av))
        elif op == sre_c.ANY:
            out.append(rng.choice(list(WORD) + EXTRA))
        elif op == sre_c.IN:
            out.append(draw_in(av, rng))
        elif op == sre_c.BRANCH:
            out.append(draw(rng.choice(av[1]), rng, depth + 1))
        elif op == sre_c.SUBPATTERN:
            out.append(draw(av[-1], rng, depth + 1))
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None)):
            lo, hi, sub = av
            hi = min(hi, lo + 3)
            for _ in range(rng.randint(lo, hi)):
                out.append(draw(sub, rng, depth + 1))
        elif op == sre_c.AT:
            pass
        else:
            raise ValueError(f"cannot draw {op}")
    return "".join(out)


def category_chars(cat):
    name = str(cat)
    if "NOT_DIGIT" in name or "NOT_WORD" in name or "NOT_SPACE" in name:
        base = DIGITS if "DIGIT" in name else WORD if "WORD" in name else SPACES
        return [c for c in list(WORD) + EXTRA + list(SPACES) if c not in base]
    if "DIGIT" in name:
        return list(DIGITS)
    if "WORD" in name:
        return list(WORD)
    return list(SPACES)


def draw_in(items, rng):
    negate = any(op == sre_c.NEGATE for op, _ in items)
    pool = []
    for op, av in items:
        if op == sre_c.LITERAL:
            pool.append(chr(av))
        elif op == sre_c.RANGE:
            lo, hi = av
            pool += [chr(lo), chr(hi), chr(rng.randint(lo, hi))]
        elif op == sre_c.CATEGORY:
            pool += category_chars(av)
    if not negate:
        return rng.choice(pool)
    # A character outside the class: try likely ones.
    return rng.choice(list(WORD) + EXTRA + list(SPACES))


def mutate(s, rng, alphabet):
    s = list(s)
    k = rng.randint(0, 2)
    if k == 0 and s:
        del s[rng.randrange(len(s))]
    elif k == 1:
        s.insert(rng.randint(0, len(s)), rng.choice(alphabet))
    elif s:
        s[rng.randrange(len(s))] = rng.choice(alphabet)
    return "".join(s)


def texts_of(pattern, rng, n):
    tree = sre_parse.parse(pattern)
    alphabet = sorted(set(pattern) | set(EXTRA) | set("ab01")) or ["a"]
    out = set()
    for _ in range(n):
        try:
            out.add(draw(tree, rng))
        except (ValueError, IndexError):
            pass
    for s in list(out):
        out.add(mutate(s, rng, alphabet))
        out.add(mutate(s, rng, alphabet))
    for _ in range(n // 2):
        out.add("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))))
    return sorted(out)


class PatternGen:
    """Random patterns in the syntax both Python and xgrammar read."""

    ATOMS = ["a", "b", "c", "\\d", "\\w", "\\s", "[ab]", "[^a]", "[a-c0-2]", ".", "é", "-",
             "\\.", "x"]

    def __init__(self, rng):
        self.rng = rng

    def expr(self, depth):
        rng = self.rng
        parts = []
        for _ in range(rng.randint(1, 3)):
            r = rng.random()
            if depth < 2 and r < 0.25:
                alts = [self.expr(depth + 1) for _ in range(rng.randint(1, 3))]
                atom = "(" + "|".join(alts) + ")"
            else:
                atom = rng.choice(self.ATOMS)
            q = rng.random()
            if q < 0.15:
                atom += "*"
            elif q < 0.3:
                atom += "+"
            elif q < 0.4:
                atom += "?"
            elif q < 0.55:
                lo = rng.randint(0, 2)
                atom += rng.choice([f"{{{lo}}}", f"{{{lo},}}", f"{{{lo},{lo + rng.randint(0, 2)}}}"])
            parts.append(atom)
        return "".join(parts)


def raw_accepts(pattern, text):
    return bool(accepts(xgr.Grammar.from_regex(pattern), text))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--random-patterns", type=int, default=60)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    gen = PatternGen(rng)
    patterns = list(HAND_PATTERNS)
    while len(patterns) < len(HAND_PATTERNS) + args.random_patterns:
        p = gen.expr(0)
        if p not in patterns:
            patterns.append(p)

    regex_cases, pattern_cases = [], []
    for p in patterns:
        texts = texts_of(p, rng, 14)
        try:
            grammar = xgr.Grammar.from_regex(p)
            verdict = lambda t: bool(accepts(grammar, t))  # noqa: E731
            reference = "xgrammar"
        except RuntimeError:
            # Python syntax xgrammar refuses (none of these use \d, \w or \s, whose meanings
            # differ): Python's re, with '.' matching everything as xgrammar's does.
            compiled = re.compile(p, re.DOTALL)
            verdict = lambda t: compiled.fullmatch(t) is not None  # noqa: E731
            reference = "re"
        regex_cases.append({"regex": p, "reference": reference,
                            "texts": [[t, verdict(t)] for t in texts]})
        pattern_cases.append({"pattern": p, "reference": reference, "texts": [
            [json.dumps(t, ensure_ascii=False)[1:-1], verdict(t)] for t in texts]})

    format_cases = []
    for f, examples in FORMAT_EXAMPLES.items():
        grammar = xgr.Grammar.from_json_schema(json.dumps({"type": "string", "format": f}))
        alphabet = sorted(set("".join(examples)) | set(EXTRA))
        texts = set(examples)
        for e in examples:
            for _ in range(6):
                texts.add(mutate(e, rng, alphabet))
        rows = []
        for t in sorted(texts):
            encoded = json.dumps(t, ensure_ascii=False)
            rows.append([encoded[1:-1], bool(accepts(grammar, encoded))])
        format_cases.append({"format": f, "texts": rows})

    json.dump({
        "generator": f"tools/make_regex_fixtures.py --seed {args.seed} "
                     f"--random-patterns {args.random_patterns}, "
                     f"xgrammar {importlib.metadata.version('xgrammar')}",
        "regex": regex_cases,
        "pattern": pattern_cases,
        "format": format_cases,
    }, sys.stdout, ensure_ascii=False, indent=0)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
