// Resolve bare package names to folders unpacked by python/clef_npm.py, so the helpers run
// offline without a node_modules tree. CLEF_JS_PACKAGES is a JSON object {name: folder}.
// A name mapped to null resolves to an empty stub module (for unused peer dependencies).
"use strict";
const Module = require("module");
const path = require("path");

const map = JSON.parse(process.env.CLEF_JS_PACKAGES || "{}");
const origResolve = Module._resolveFilename;
const origLoad = Module._load;

function mapped(request) {
  for (const name of Object.keys(map)) {
    if (request === name || request.startsWith(name + "/")) return name;
  }
  return null;
}

Module._load = function (request, parent, isMain) {
  const name = mapped(request);
  if (name !== null && map[name] === null) return {};
  return origLoad.call(this, request, parent, isMain);
};

Module._resolveFilename = function (request, parent, isMain, options) {
  const name = mapped(request);
  if (name !== null && map[name] !== null) {
    request = path.join(map[name], request.slice(name.length));
  }
  return origResolve.call(this, request, parent, isMain, options);
};
