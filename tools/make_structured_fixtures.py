#!/usr/bin/env python3
"""Random JSON schemas and documents for ctxpar's JSON-schema matcher, classified by the
`jsonschema` package (Draft 2020-12): the reference the C++ test (tests/structured) compares with.

Each document records `valid` (what jsonschema says) and `canonical` (whether it also follows
the generation rules ctxpar shares with vLLM's xgrammar backend, which accept a subset of the
valid documents: properties in the schema's order, undeclared properties only where
additionalProperties allows them explicitly (or on a plain {"type": "object"}), every prefixItems
entry present, integers written without a fraction or exponent, const / enum values written as
compact JSON, whitespace only ' ', '\\n', '\\t' between tokens). The matcher must accept a
document exactly when it is valid and canonical.

    python3 tools/make_structured_fixtures.py > tests/fixtures/structured/json_schema_cases.json

Deterministic for a given --seed and jsonschema version (see the output's "generator" field).
"""
import argparse
import importlib.metadata
import json
import random
import sys

import jsonschema

WS = [" ", "\n", "\t"]
CHARS = list("abcxyz019 _-") + ["\"", "\\", "/", "\n", "\t", "\u00e9", "\u4e2d", "\U0001F600",
                                 "\u2028", "\x01"]


def rand_string(rng, lo=0, hi=6):
    return "".join(rng.choice(CHARS) for _ in range(rng.randint(lo, hi)))


class SchemaGen:
    def __init__(self, rng):
        self.rng = rng
        self.defs = {}

    def scalar_literal(self):
        r = self.rng.random()
        if r < 0.4:
            return rand_string(self.rng, 0, 4).replace("\x01", "")
        if r < 0.7:
            return self.rng.randint(-50, 50)
        if r < 0.85:
            return self.rng.choice([True, False])
        return None

    def schema(self, depth, kind=None):
        rng = self.rng
        kinds = ["string", "integer", "number", "boolean", "null", "enum", "const"]
        if depth < 3:
            kinds += ["object", "object", "array", "array", "anyOf", "oneOf", "typelist"]
            if depth > 0:
                kinds.append("ref")
        k = kind or rng.choice(kinds)
        if k == "string":
            s = {"type": "string"}
            if rng.random() < 0.4:
                s["minLength"] = rng.randint(0, 3)
            if rng.random() < 0.4:
                s["maxLength"] = s.get("minLength", 0) + rng.randint(0, 4)
            return s
        if k == "integer":
            s = {"type": "integer"}
            if rng.random() < 0.5:
                s[rng.choice(["minimum", "exclusiveMinimum"])] = rng.randint(-30, 30)
            if rng.random() < 0.5:
                lo = s.get("minimum", s.get("exclusiveMinimum", -30))
                s[rng.choice(["maximum", "exclusiveMaximum"])] = lo + rng.randint(2, 200)
            return s
        if k == "number":
            s = {"type": "number"}
            if rng.random() < 0.5:
                s[rng.choice(["minimum", "exclusiveMinimum"])] = rng.choice([-5, 0, 0.5, 2.25])
            if rng.random() < 0.5:
                lo = s.get("minimum", s.get("exclusiveMinimum", -10))
                s[rng.choice(["maximum", "exclusiveMaximum"])] = lo + rng.choice([0.5, 1, 7.75])
            return s
        if k == "boolean":
            return {"type": "boolean"}
        if k == "null":
            return {"type": "null"}
        if k == "enum":
            vals = []
            for _ in range(rng.randint(1, 4)):
                v = self.scalar_literal()
                if not any(v == w and type(v) is type(w) for w in vals):
                    vals.append(v)
            return {"enum": vals}
        if k == "const":
            return {"const": self.scalar_literal()}
        if k == "object":
            s = {"type": "object"}
            if rng.random() < 0.85:
                props = {}
                for i in range(rng.randint(0, 4)):
                    props[rng.choice(["a", "b", "name", "id", "x_y", "\u00e9t\u00e9"]) + str(i)] = \
                        self.schema(depth + 1)
                s["properties"] = props
                names = list(props)
                s["required"] = [n for n in names if rng.random() < 0.5]
                r = rng.random()
                if r < 0.3:
                    s["additionalProperties"] = False
                elif r < 0.45:
                    s["additionalProperties"] = True
                elif r < 0.6:
                    s["additionalProperties"] = self.schema(depth + 1)
                # Property counts the schema can meet (ctxpar refuses the others).
                closed = s.get("additionalProperties", False) is False
                required = len(s["required"])
                most = len(names) if closed else len(names) + 2
                if rng.random() < 0.3:
                    s["minProperties"] = rng.randint(0, most)
                if rng.random() < 0.3:
                    s["maxProperties"] = rng.randint(max(required, s.get("minProperties", 0)),
                                                     most + 1)
            return s
        if k == "array":
            s = {"type": "array"}
            if rng.random() < 0.3:
                s["prefixItems"] = [self.schema(depth + 1) for _ in range(rng.randint(1, 2))]
                if rng.random() < 0.5:
                    s["items"] = self.schema(depth + 1)
            else:
                s["items"] = self.schema(depth + 1)
            n = len(s.get("prefixItems", []))
            if "items" in s:
                if rng.random() < 0.4:
                    s["minItems"] = rng.randint(0, 3)
                if rng.random() < 0.4:
                    s["maxItems"] = max(n, s.get("minItems", 0)) + rng.randint(0, 3)
            return s
        if k in ("anyOf", "oneOf"):
            # Options of distinct types: oneOf is matched as anyOf (xgrammar), which agrees with
            # jsonschema only when no value satisfies two options.
            types = rng.sample(["string", "integer", "boolean", "null", "object", "array"],
                               rng.randint(1, 3))
            return {k: [self.schema(depth + 1, t) for t in types]}
        if k == "typelist":
            return {"type": rng.sample(["string", "integer", "boolean", "null"], 2)}
        # ref
        name = "D" + str(len(self.defs))
        self.defs[name] = {}  # reserved before the target makes references of its own
        self.defs[name] = self.schema(depth + 1)
        return {"$ref": "#/$defs/" + name, "description": "a reference"}


class ValueGen:
    def __init__(self, rng, root):
        self.rng = rng
        self.root = root

    def resolve(self, s):
        while "$ref" in s:
            s = self.root["$defs"][s["$ref"].split("/")[-1]]
        return s

    def value(self, s, depth=0):
        rng = self.rng
        s = self.resolve(s)
        if "const" in s:
            return s["const"]
        if "enum" in s:
            return rng.choice(s["enum"])
        for key in ("anyOf", "oneOf"):
            if key in s:
                return self.value(rng.choice(s[key]), depth)
        t = s.get("type")
        if isinstance(t, list):
            t = rng.choice(t)
        if t == "string":
            lo = s.get("minLength", 0)
            hi = s.get("maxLength", lo + 5)
            return rand_string(rng, lo, hi)
        if t == "integer":
            lo = s.get("minimum", s.get("exclusiveMinimum", -1000) + 1)
            hi = s.get("maximum", s.get("exclusiveMaximum", 1000) - 1)
            return rng.randint(lo, hi)
        if t == "number":
            lo = s.get("minimum", s.get("exclusiveMinimum"))
            hi = s.get("maximum", s.get("exclusiveMaximum"))
            if lo is None and hi is None:
                return rng.choice([0.5, -2.25, 1e5, -0.0, 3, 1e-7, 123456.789])
            lo = hi - 10 if lo is None else lo
            hi = lo + 10 if hi is None else hi
            return round(rng.uniform(lo, hi), rng.randint(0, 3))
        if t == "boolean":
            return rng.choice([True, False])
        if t == "null":
            return None
        if t == "array":
            pre = [self.value(p, depth + 1) for p in s.get("prefixItems", [])]
            if "items" in s and depth < 4:
                lo = max(0, s.get("minItems", 0) - len(pre))
                hi = s.get("maxItems", len(pre) + lo + 3) - len(pre)
                pre += [self.value(s["items"], depth + 1) for _ in range(rng.randint(lo, max(lo, hi)))]
            return pre
        if t == "object":
            out = {}
            props = s.get("properties")
            if props is None:
                for i in range(rng.randint(0, 2)):
                    out["k" + str(i)] = rng.choice([1, "v", None, [True], {"z": 0.5}])
                return out
            req = set(s.get("required", []))
            for name, sub in props.items():
                if name in req or rng.random() < 0.6:
                    out[name] = self.value(sub, depth + 1)
            extra = s.get("additionalProperties")
            if extra not in (None, False) and rng.random() < 0.5:
                out["extra" + str(rng.randint(0, 9))] = (
                    self.value(extra, depth + 1) if isinstance(extra, dict) else 7)
            return out
        raise AssertionError(s)


def canonical(root, s, v):
    """The xgrammar-style rules beyond validity (see the module doc)."""
    while "$ref" in s:
        s = root["$defs"][s["$ref"].split("/")[-1]]
    if "const" in s or "enum" in s:
        return True  # literal bytes: the writer prints them compactly
    for key in ("anyOf", "oneOf"):
        if key in s:
            return any(canonical(root, o, v) for o in s[key]
                       if jsonschema.Draft202012Validator(dict(o, **{"$defs": root.get("$defs", {})})).is_valid(v))
    t = s.get("type")
    types = t if isinstance(t, list) else [t]
    if isinstance(v, dict) and "object" in types:
        props = s.get("properties")
        if props is None:
            return all(canonical(root, {}, x) for x in v.values())
        names = list(props)
        order = [names.index(k) for k in v if k in props]
        if order != sorted(order):
            return False
        extra = s.get("additionalProperties")
        seen_extra = False
        for k, x in v.items():
            if k in props:
                if seen_extra or not canonical(root, props[k], x):
                    return False
            else:
                if extra in (None, False):
                    return False
                seen_extra = True
                if isinstance(extra, dict) and not canonical(root, extra, x):
                    return False
        return True
    if isinstance(v, list) and "array" in types:
        pre = s.get("prefixItems", [])
        if len(v) < len(pre):
            return False
        if len(v) > len(pre) and "items" not in s and pre:
            return False
        for i, x in enumerate(v):
            sub = pre[i] if i < len(pre) else s.get("items", {})
            if not canonical(root, sub, x):
                return False
        return True
    if isinstance(v, float) and types == ["integer"]:
        return False
    bounds = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
    if isinstance(v, (int, float)) and not isinstance(v, bool) and "number" in types and \
            any(b in s for b in bounds):
        text = json.dumps(v)  # bounded numbers are written without exponent, <= 18 digits
        return "e" not in text and sum(c.isdigit() for c in text) <= 18
    return True


def write(rng, root, s, v):
    """JSON text with random whitespace where xgrammar allows it. Declared keys and const /
    enum values are written as compact JSON with non-ASCII kept (the bytes the grammar demands);
    other strings escape non-ASCII at random."""
    ws = lambda: "".join(rng.choice(WS) for _ in range(rng.choice([0, 0, 0, 1, 2])))
    while isinstance(s, dict) and "$ref" in s:
        s = root["$defs"][s["$ref"].split("/")[-1]]
    if not isinstance(s, dict):
        s = {}
    if "const" in s or "enum" in s:
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    for key in ("anyOf", "oneOf"):
        if key in s:
            fits = [o for o in s[key] if jsonschema.Draft202012Validator(
                dict(o, **{"$defs": root.get("$defs", {})})).is_valid(v)]
            return write(rng, root, fits[0] if fits else {}, v)
    if isinstance(v, dict):
        if not v:
            return "{" + ws() + "}"
        props = s.get("properties", {})
        extra = s.get("additionalProperties")
        parts = []
        for k, x in v.items():
            declared = k in props
            key = json.dumps(k, ensure_ascii=not declared and rng.random() < 0.5)
            sub = props[k] if declared else (extra if isinstance(extra, dict) else {})
            parts.append(ws() + key + ws() + ":" + ws() + write(rng, root, sub, x) + ws())
        return "{" + ",".join(parts) + "}"
    if isinstance(v, list):
        if not v:
            return "[" + ws() + "]"
        pre = s.get("prefixItems", [])
        return "[" + ",".join(
            ws() + write(rng, root, pre[i] if i < len(pre) else s.get("items", {}), x) + ws()
            for i, x in enumerate(v)) + "]"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=rng.random() < 0.5)
    return json.dumps(v)


def mutate(rng, gen, s, v):
    """A value near v, often invalid."""
    s = gen.resolve(s)
    r = rng.random()
    if isinstance(v, dict) and v and r < 0.5:
        v = dict(v)
        k = rng.choice(list(v))
        if rng.random() < 0.5:
            del v[k]
        else:
            sub = s.get("properties", {}).get(k, {})
            v[k] = mutate(rng, gen, sub, v[k])
        return v
    if isinstance(v, dict) and r < 0.7:
        v = dict(v)
        v["zz" + str(rng.randint(0, 3))] = 1
        return v
    if isinstance(v, list) and v and r < 0.6:
        v = list(v)
        i = rng.randrange(len(v))
        if rng.random() < 0.4:
            del v[i]
        elif rng.random() < 0.5:
            v.append(v[i])
        else:
            pre = s.get("prefixItems", [])
            sub = pre[i] if i < len(pre) else s.get("items", {})
            v[i] = mutate(rng, gen, sub, v[i])
        return v
    if isinstance(v, str) and r < 0.5:
        return v + rand_string(rng, 1, 3)
    if isinstance(v, int) and not isinstance(v, bool) and r < 0.5:
        return v + rng.choice([-100, -1, 1, 100])
    return rng.choice([0, -7, 2.5, "s", "", True, None, [], {}, [1], {"a": 1}])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=20261206)
    ap.add_argument("--schemas", type=int, default=160)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    cases = []
    for _ in range(args.schemas):
        gen = SchemaGen(rng)
        schema = gen.schema(0)
        if gen.defs:
            schema = dict(schema, **{"$defs": gen.defs}) if "$ref" not in schema else schema
            schema.setdefault("$defs", gen.defs)
        validator = jsonschema.Draft202012Validator(schema)
        values = ValueGen(rng, schema)
        docs = []
        seen = set()
        for i in range(14):
            v = values.value(schema)
            if i >= 5:
                v = mutate(rng, values, schema, v)
            text = write(rng, schema, schema, v)
            if text in seen:
                continue
            seen.add(text)
            valid = validator.is_valid(v)
            docs.append({"text": text, "valid": valid,
                         "canonical": bool(valid and canonical(schema, schema, v))})
        cases.append({"schema": schema, "docs": docs})
    out = {"generator": "tools/make_structured_fixtures.py --seed %d --schemas %d (jsonschema %s)"
           % (args.seed, args.schemas, importlib.metadata.version("jsonschema")),
           "cases": cases}
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
