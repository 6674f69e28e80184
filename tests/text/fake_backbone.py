"""A tiny deterministic backbone for capture tests (no downloads).

Tokens: runs of letters/digits, or single other characters; spaces are
dropped. id = 6 + crc32(token) % 500. States: a fixed function of the
token id and its position, d = 8.
"""
import re
import zlib

import numpy as np


class FakeBackbone:
    name = "fake"
    version = "fake@1"
    hidden_size = 8
    window = 512

    def __init__(self, cache_dir=None):
        pass

    def provenance(self):
        return {"backbone": self.name, "backbone_version": self.version,
                "tokenizer": "fake-regex"}

    def tokenize(self, text):
        return [6 + zlib.crc32(t.encode()) % 500
                for t in re.findall(r"[A-Za-z0-9]+|[^A-Za-z0-9 ]", text)]

    def forward(self, ids):
        t = np.arange(len(ids), dtype=np.float64)[:, None]
        k = np.arange(1, self.hidden_size + 1, dtype=np.float64)[None, :]
        i = np.asarray(ids, dtype=np.float64)[:, None]
        return np.sin(0.01 * i * k + 0.1 * t).astype(np.float32)

    def forward_batch(self, seqs):
        return [self.forward(s) for s in seqs]

    def lexical(self, ids):
        k = np.arange(1, self.hidden_size + 1, dtype=np.float64)[None, :]
        return np.cos(0.02 * np.asarray(ids, np.float64)[:, None] * k) \
            .astype(np.float32)
