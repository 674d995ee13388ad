#!/usr/bin/env python3
"""Prints SHA-256 digests (Python's hashlib) of messages whose lengths sit on the padding
boundaries of the 64-byte block, for tests/kv/sha256_test.cc. Message byte i is (31*i + 7) % 256.
"""
import hashlib

for n in (1, 55, 56, 57, 63, 64, 65, 111, 119, 120, 127, 128, 129, 1000):
    msg = bytes((31 * i + 7) % 256 for i in range(n))
    print(f'      {{{n}, "{hashlib.sha256(msg).hexdigest()}"}},')
