#!/usr/bin/env python3
"""Prints block hashes (Python's hashlib SHA-256 over the encoding that kv/block_hash.h
documents) for tests/kv/block_hash_test.cc: an outside check of the encoding and the digest.
Tokens of case k are (7919*i + 13*k) % 150000 - 1000 (negatives included), keys are fixed."""
import hashlib
import struct


def block_hash(parent, tokens, keys):
    msg = bytes([1]) + parent if parent is not None else bytes([0])
    msg += struct.pack("<Q", len(tokens)) + b"".join(struct.pack("<i", t) for t in tokens)
    msg += struct.pack("<Q", len(keys))
    for key in keys:
        raw = key.encode()
        msg += struct.pack("<Q", len(raw)) + raw
    return hashlib.sha256(msg).digest()


def tokens(k, n):
    return [(7919 * i + 13 * k) % 150000 - 1000 for i in range(n)]


parent = None
for k, (n, keys) in enumerate([(0, []), (1, []), (16, []), (64, ["salt"]), (5, ["", "lora:é"])]):
    h = block_hash(parent, tokens(k, n), keys)
    # C++ literals of the keys' UTF-8 bytes.
    keys_cc = ", ".join('"' + "".join(c if c.isascii() else f"\\x{b:02x}"
                                      for c in key for b in c.encode()) + '"' for key in keys)
    print(f'      {{{k}, {n}, {{{keys_cc}}}, "{h.hex()}"}},')
    parent = h
