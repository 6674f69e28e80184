// node tokenize.js TEXTS.json VOCAB.json OUT.json
// Runs @energetic-ai/embeddings' own Tokenizer (reached through EmbeddingsModel, whose
// constructor builds it; @energetic-ai/core is stubbed since encode() never uses it) over
// a JSON list of strings and writes the JSON list of id lists.
"use strict";
require("./resolve.js");
const fs = require("fs");
const { EmbeddingsModel } = require("@energetic-ai/embeddings");

const [textsFile, vocabFile, outFile] = process.argv.slice(2);
const texts = JSON.parse(fs.readFileSync(textsFile, "utf-8"));
const vocabulary = JSON.parse(fs.readFileSync(vocabFile, "utf-8"));
const tokenizer = new EmbeddingsModel({ vocabulary, model: null }).tokenizer;
const out = texts.map((t) => tokenizer.encode(t));
fs.writeFileSync(outFile, JSON.stringify(out));
