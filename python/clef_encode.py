"""Decision requests -> token ids and spans, in the reference's layout.

This is HEAD.md Appendix C (`encode_record`): one token sequence per
request, state first, then the schema, with a question span over each
field's instruction and an option span over each option's JSON.

    ids = prefix + state + schema + suffix

`tok` is any function text -> list of token ids without special tokens
(a backbone's tokenizer). Every fragment of the template is tokenised on
its own and the ids are concatenated, exactly as the reference does, so
the spans fall on fragment boundaries.

A request (one JSON Lines row of `clef capture`):

    {"id": "uci-amazon-17", "split": "train", "state": "...",
     "questions": {"source": {"type": "choice", "instructions": "...",
                              "criteria": {"amazon": "...", ...}},
                   "positive": {"type": "noul", "instructions": "..."}},
     "labels": {"source": "amazon", "positive": "false"}}

`choice` criteria map option id -> description (options sorted by id);
`noul` has the options true, false (criteria may override their
descriptions); `score` criteria are a list, the options are "0", "1", ...
A label is an option id (for score also the index as an integer) or
{option id: probability} (soft target).
"""

import json
import re

TEMPLATE_VERSION = "clef-encode/1 (HEAD.md Appendix C)"

SYSTEM = ("Read the complete state and schema. Decide every field jointly. "
          "Each answer must be exactly one of that field's allowed options.")
PREFIX = ("<|im_start|>system\n" + SYSTEM +
          "<|im_end|>\n<|im_start|>user\nSTATE:\n")
SCHEMA_HEAD = "\n\nSCHEMA FIELDS:\n"
SUFFIX = ("\n<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
          "JOINT SCHEMA DECISIONS:")

NOUL_DEFAULT = {"true": "The proposition is true or the answer is yes.",
                "false": "The proposition is false or the answer is no."}
TYPE_IDS = {"noul": 0, "choice": 1, "score": 2}
SPLITS = ("train", "validation", "test")
ID_RE = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


class RequestError(ValueError):
    """A request breaks a rule: names the field and the rule."""

    def __init__(self, field, rule):
        super().__init__("field %s: %s" % (field, rule))
        self.field = field
        self.rule = rule


def render(value):
    """A string as itself; anything else as compact JSON, sorted keys."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)


def _options(qid, q, option_order):
    """[(option id, description or None)] of one question, in layout order."""
    typ = q.get("type")
    crit = q.get("criteria")
    field = "questions.%s.criteria" % qid
    if typ == "noul":
        if crit is not None and not isinstance(crit, dict):
            raise RequestError(field, "noul criteria must be an object "
                               "overriding the descriptions of true/false")
        crit = crit or {}
        extra = sorted(set(crit) - {"true", "false"})
        if extra:
            raise RequestError(field, "noul options are exactly true, false "
                               "(got %s)" % ", ".join(extra))
        return [(o, crit.get(o, NOUL_DEFAULT[o])) for o in ("true", "false")]
    if typ == "choice":
        if not isinstance(crit, dict) or not crit:
            raise RequestError(field, "a choice question needs a non-empty "
                               "object of option id -> description")
        keys = list(crit) if option_order == "given" else sorted(crit)
        for k in keys:
            if not k:
                raise RequestError(field, "an option id is empty")
            d = crit[k]
            if d is not None and not isinstance(d, (str, dict, list)):
                raise RequestError("%s.%s" % (field, k),
                                   "a description is a string or JSON value")
        return [(k, crit[k]) for k in keys]
    if typ == "score":
        if not isinstance(crit, list) or not crit:
            raise RequestError(field, "a score question needs a non-empty "
                               "list of criteria")
        return [(str(i), d) for i, d in enumerate(crit)]
    raise RequestError("questions.%s.type" % qid,
                       "must be noul, choice or score (got %r)" % (typ,))


def _label(qid, label, options):
    """(label index or None, target list or None) of one question."""
    ids = [o for o, _ in options]
    field = "labels.%s" % qid
    if isinstance(label, dict):
        if not label:
            raise RequestError(field, "a soft target needs probabilities")
        target = [0.0] * len(ids)
        for k, p in label.items():
            if k not in ids:
                raise RequestError(field, "unknown option %r (options: %s)"
                                   % (k, ", ".join(ids)))
            if isinstance(p, bool) or not isinstance(p, (int, float)) \
                    or not p >= 0 or p == float("inf"):
                raise RequestError("%s.%s" % (field, k),
                                   "a probability is a finite number >= 0")
            target[ids.index(k)] = float(p)
        if abs(sum(target) - 1.0) > 1e-6:
            raise RequestError(field, "probabilities sum to %.9g, not 1"
                               % sum(target))
        return None, target
    if isinstance(label, bool):
        label = "true" if label else "false"
    if isinstance(label, int) and len(ids) and ids[0] == "0":
        label = str(label)
    if not isinstance(label, str) or label not in ids:
        raise RequestError(field, "unknown option %r (options: %s)"
                           % (label, ", ".join(ids)))
    return ids.index(label), None


def parse_request(req, option_order="sorted"):
    """Checks one request; returns its questions in layout form.

    Returns [{"id", "type", "instruction", "options": [(id, desc)],
    "label", "target"}] in request order.
    """
    if not isinstance(req, dict):
        raise RequestError("(line)", "a request is a JSON object")
    rid = req.get("id")
    if not isinstance(rid, str) or not ID_RE.match(rid):
        raise RequestError("id", "must match [A-Za-z0-9._-]{1,128}")
    if req.get("split") not in SPLITS:
        raise RequestError("split", "must be train, validation or test")
    if "state" not in req or req["state"] is None:
        raise RequestError("state", "is missing")
    qs = req.get("questions")
    if not isinstance(qs, dict) or not qs:
        raise RequestError("questions", "a non-empty object of questions")
    labels = req.get("labels", {})
    if not isinstance(labels, dict):
        raise RequestError("labels", "an object of question id -> label")
    unknown = [k for k in labels if k not in qs]
    if unknown:
        raise RequestError("labels.%s" % unknown[0], "no such question")
    out = []
    for qid, q in qs.items():
        if not qid:
            raise RequestError("questions", "a question id is empty")
        if not isinstance(q, dict):
            raise RequestError("questions.%s" % qid, "a question is an object")
        options = _options(qid, q, option_order)
        if len({o for o, _ in options}) != len(options):
            raise RequestError("questions.%s.criteria" % qid,
                               "option ids are not unique")
        instr = q.get("instructions")
        if instr is not None and not isinstance(instr, (str, dict, list)):
            raise RequestError("questions.%s.instructions" % qid,
                               "must be a string or JSON value")
        label, target = None, None
        if qid in labels:
            label, target = _label(qid, labels[qid], options)
        elif req["split"] != "test":
            raise RequestError("labels.%s" % qid, "a %s request needs a label "
                               "for every question" % req["split"])
        out.append({"id": qid, "type": q["type"],
                    "instruction": instr if instr else qid,
                    "options": options, "label": label, "target": target})
    return out


def _option_json(oid, desc):
    obj = {"option_id": oid}
    if desc is not None and desc != "":
        obj["description"] = desc
    return render(obj)


class Encoder:
    """Lays out requests with one tokenizer; caches the fixed fragments."""

    def __init__(self, tok):
        self.tok = tok
        self._cache = {}

    def _t(self, text):
        ids = self._cache.get(text)
        if ids is None:
            ids = list(self.tok(text))
            if len(self._cache) < 100000:
                self._cache[text] = ids
        return ids

    def schema(self, questions):
        """(ids, question spans, option spans) of the schema, from 0."""
        ids = list(self._t(SCHEMA_HEAD))
        qspans, ospans = [], []
        for n, q in enumerate(questions, 1):
            ids += self._t("\nFIELD %d\nID: %s\nTYPE: %s\nINSTRUCTION: "
                           % (n, q["id"], q["type"]))
            span = self._t(render(q["instruction"]))
            if not span:
                raise RequestError("questions.%s.instructions" % q["id"],
                                   "tokenises to nothing")
            qspans.append((len(ids), len(ids) + len(span)))
            ids += span
            ids += self._t("\nALLOWED OPTIONS:\n")
            for i, (oid, desc) in enumerate(q["options"], 1):
                ids += self._t("OPTION %d: " % i)
                span = self._t(_option_json(oid, desc))
                ospans.append((len(ids), len(ids) + len(span)))
                ids += span
                ids += self._t("\n")
            ids += self._t("END FIELD\n")
        return ids, qspans, ospans

    def encode(self, state, questions, window):
        """One request -> dict of ids, spans, state span and truncation.

        The state is cut at its end to fit `window` tokens; the schema is
        never cut (RequestError when it does not fit).
        """
        prefix, suffix = self._t(PREFIX), self._t(SUFFIX)
        schema, qspans, ospans = self.schema(questions)
        fixed = len(prefix) + len(schema) + len(suffix)
        if fixed > window:
            raise RequestError("questions", "the schema needs %d tokens with "
                               "the template, more than the window of %d "
                               "(--max-tokens)" % (fixed, window))
        text = render(state)
        full = self._t(text) if text else []
        keep = min(len(full), window - fixed)
        truncated = keep < len(full)
        st = full[:keep]
        shift = len(prefix) + len(st)
        ids = prefix + st + schema + suffix
        return {"ids": ids,
                "question_spans": [(a + shift, b + shift) for a, b in qspans],
                "option_spans": [(a + shift, b + shift) for a, b in ospans],
                "state_span": (len(prefix), len(prefix) + len(st)),
                "state_tokens": len(st), "state_tokens_full": len(full),
                "truncated": truncated}
