// node states.js MODEL_DIR SEQS.json OUT.json NODE...
// Loads USE-Lite's TensorFlow.js graph (MODEL_DIR/model.json + shards) on the tfjs CPU
// backend and, for each id list in SEQS.json (one sequence per call: batch index 0), runs
// executeAsync({indices, values}) up to the named graph nodes. Writes
// [{node: {shape, data}} per sequence] as JSON (float32 values printed exactly).
"use strict";
require("./resolve.js");
const fs = require("fs");
const path = require("path");
const tf = require("@tensorflow/tfjs-core");
require("@tensorflow/tfjs-backend-cpu");
const converter = require("@tensorflow/tfjs-converter");

async function main() {
  const [modelDir, seqsFile, outFile, ...nodes] = process.argv.slice(2);
  await tf.setBackend("cpu");
  await tf.ready();
  const json = JSON.parse(fs.readFileSync(path.join(modelDir, "model.json"), "utf-8"));
  const weightSpecs = [];
  const buffers = [];
  for (const group of json.weightsManifest) {
    weightSpecs.push(...group.weights);
    for (const p of group.paths) buffers.push(fs.readFileSync(path.join(modelDir, p)));
  }
  const all = Buffer.concat(buffers);
  const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
  const handler = tf.io.fromMemory({ modelTopology: json.modelTopology, weightSpecs, weightData });
  const model = await converter.loadGraphModel(handler);

  const seqs = JSON.parse(fs.readFileSync(seqsFile, "utf-8"));
  const out = [];
  for (const ids of seqs) {
    const indices = tf.tensor2d(ids.map((_, t) => [0, t]), [ids.length, 2], "int32");
    const values = tf.tensor1d(ids, "int32");
    let res = await model.executeAsync({ indices, values }, nodes);
    if (!Array.isArray(res)) res = [res];
    const rec = {};
    for (let i = 0; i < nodes.length; i++) {
      rec[nodes[i]] = { shape: res[i].shape, data: Array.from(await res[i].data()) };
      res[i].dispose();
    }
    indices.dispose();
    values.dispose();
    out.push(rec);
  }
  fs.writeFileSync(outFile, JSON.stringify(out));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
