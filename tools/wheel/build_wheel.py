#!/usr/bin/env python3
"""build_wheel.py: packs the plugin, the `commlens` program and the Python package python/commlens
into one wheel for x86-64 Linux, with the standard library only (a wheel is a zip file with a
.dist-info folder: METADATA, WHEEL, entry_points.txt, the LICENSE and RECORD, every file's sha256).

The platform tag is named after the highest glibc symbol version the binaries need
(manylinux_2_NN_x86_64), read from their version references; the build fails when that is past
--glibc-max, or when a binary needs a shared library outside the few every Linux has (the
program must need no json-c or zlib: link them statically). The version comes from the tree's
VERSION file and must be semver. Same inputs, same bytes: entries sorted, times fixed.

usage: build_wheel.py --plugin SO --cli PROGRAM --out DIR [--glibc-max 2.34]
Prints one line: the wheel's path, its size and the glibc it needs."""
import argparse
import base64
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "commlens"
# MAJOR.MINOR.PATCH: semver that is also a PEP 440 version, as a wheel's file name needs
SEMVER = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")
# shared libraries a binary may need: glibc's own, and zlib for the plugin (on every Linux that
# runs NCCL; the manylinux policies allow it)
GLIBC_LIBS = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
              "ld-linux-x86-64.so.2"}
ALLOWED = {"cli": GLIBC_LIBS, "plugin": GLIBC_LIBS | {"libz.so.1"}}
FIXED_TIME = (1980, 1, 1, 0, 0, 0)   # the earliest a zip entry can carry


def fail(msg):
    print("make wheel: " + msg, file=sys.stderr)
    sys.exit(1)


def read_version():
    with open(os.path.join(ROOT, "VERSION")) as f:
        v = f.read().strip()
    if not SEMVER.match(v):
        fail("VERSION holds %r, not a semantic version (MAJOR.MINOR.PATCH)" % v)
    return v


def elf_needs(path):
    """(shared libraries NEEDED, the highest GLIBC_x.y[.z] referenced as a tuple)"""
    try:
        out = subprocess.run(["objdump", "-p", path], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        fail("cannot read %s with objdump (binutils): %s" % (path, e))
    needed = re.findall(r"^\s+NEEDED\s+(\S+)$", out, re.M)
    versions = [tuple(int(x) for x in v.split("."))
                for v in re.findall(r"\sGLIBC_([0-9]+(?:\.[0-9]+)+)$", out, re.M)]
    if not versions:
        fail("%s references no GLIBC symbol version: not a binary of this build?" % path)
    return needed, max(versions)


def check_binaries(binaries, glibc_max):
    """The highest glibc the binaries need, as (major, minor); fails past glibc_max."""
    top = (0, 0)
    for kind, path in binaries:
        needed, glibc = elf_needs(path)
        extra = sorted(set(needed) - ALLOWED[kind])
        if extra:
            fail("%s needs %s at run time; the wheel's binaries may need only glibc%s (link the "
                 "rest statically)" % (path, ", ".join(extra), " and zlib" if kind == "plugin" else ""))
        top = max(top, glibc[:2])
    if top > glibc_max:
        fail("the binaries need glibc %d.%d, past the %d.%d allowed (--glibc-max): build them on an "
             "older system, or raise WHEEL_GLIBC_MAX knowing who can no longer install it" % (top + glibc_max))
    return top


def stripped(src, dst):
    """src without its debug sections, at dst (a wheel need not carry them)."""
    try:
        subprocess.run(["objcopy", "--strip-debug", src, dst], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        fail("cannot strip %s with objcopy (binutils): %s" % (src, e))
    with open(dst, "rb") as f:
        return f.read()


def settings_names(cli):
    """The plugin's COMMLENS_* variables, as `commlens env` lists them (commlens.enable checks
    its keywords against them)."""
    out = subprocess.run([cli, "env"], capture_output=True, text=True, check=True).stdout
    names = [line.split("\t", 1)[0] for line in out.splitlines() if line.startswith("COMMLENS_")]
    if len(names) < 10:
        fail("%s env listed %d variables" % (cli, len(names)))
    return names


def metadata(version):
    readme = ("commlens is an NCCL profiler plugin and a command-line tool: every rank records what "
              "NCCL does, and `commlens report` says which rank and which channel made the others "
              "wait, and what it cost.\n\nThis wheel holds the plugin, the `commlens` program and "
              "the Python module `commlens` (`commlens.enable()`, `commlens.plugin_path()`).\n")
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
            "Summary: NCCL profiler plugin: which rank and channel made everyone wait\n"
            "License: Apache-2.0\nClassifier: License :: OSI Approved :: Apache Software License\n"
            "Requires-Python: >=3.9\nClassifier: Operating System :: POSIX :: Linux\n"
            "Classifier: Programming Language :: C\nClassifier: Programming Language :: Python :: 3\n"
            "Description-Content-Type: text/markdown\n\n%s" % (NAME, version, readme))


def record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


def write_wheel(path, files):
    """files: (arcname, bytes, executable); RECORD is made from them and written last."""
    dist = next(a for a, _, _ in files if a.endswith(".dist-info/WHEEL")).rsplit("/", 1)[0]
    record = "\n".join([record_line(a, d) for a, d, _ in files] + ["%s/RECORD,," % dist]) + "\n"
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w") as z:
        for arcname, data, executable in files + [(dist + "/RECORD", record.encode(), False)]:
            info = zipfile.ZipInfo(arcname, FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = ((0o755 if executable else 0o644) | 0o100000) << 16
            info.create_system = 3   # Unix: the mode above is read
            z.writestr(info, data)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--glibc-max", default="2.34")
    a = ap.parse_args()
    version = read_version()
    glibc_max = tuple(int(x) for x in a.glibc_max.split(".")[:2])
    glibc = check_binaries([("plugin", a.plugin), ("cli", a.cli)], glibc_max)
    tag = "py3-none-manylinux_%d_%d_x86_64" % glibc
    dist = "%s-%s.dist-info" % (NAME, version)
    os.makedirs(a.out, exist_ok=True)
    files = []
    pkg = os.path.join(ROOT, "python", NAME)
    for f in sorted(os.listdir(pkg)):
        if f.endswith(".py"):
            with open(os.path.join(pkg, f), "rb") as fh:
                files.append(("%s/%s" % (NAME, f), fh.read(), False))
    build = ("\"\"\"Facts of this build (written by tools/wheel/build_wheel.py).\"\"\"\n"
             "VERSION = %r\nGLIBC = %r\nSETTINGS = %r\n" % (version, "%d.%d" % glibc, tuple(settings_names(a.cli))))
    files.append(("%s/_build.py" % NAME, build.encode(), False))
    with tempfile.TemporaryDirectory() as tmp:
        files.append(("%s/bin/commlens" % NAME, stripped(a.cli, os.path.join(tmp, "cli")), True))
        files.append(("%s/lib/libnccl-profiler-commlens.so" % NAME, stripped(a.plugin, os.path.join(tmp, "so")), False))
    files.append((dist + "/METADATA", metadata(version).encode(), False))
    with open(os.path.join(ROOT, "LICENSE"), "rb") as fh:
        files.append((dist + "/LICENSE", fh.read(), False))
    files.append((dist + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: commlens build_wheel.py\n"
                                    "Root-Is-Purelib: false\nTag: %s\n" % tag).encode(), False))
    files.append((dist + "/entry_points.txt",
                  b"[console_scripts]\ncommlens = commlens.__main__:main\n", False))
    files.append((dist + "/top_level.txt", b"commlens\n", False))
    files.sort(key=lambda f: (f[0].startswith(dist), f[0]))
    name = "%s-%s-%s.whl" % (NAME, version, tag)
    for old in os.listdir(a.out):   # one wheel in the folder: the one this build made
        if old.startswith(NAME + "-") and old.endswith(".whl") and old != name:
            os.unlink(os.path.join(a.out, old))
    path = os.path.join(a.out, name)
    write_wheel(path, files)
    print("built %s (%d bytes; needs glibc %d.%d or later)" % (path, os.path.getsize(path), glibc[0], glibc[1]))


if __name__ == "__main__":
    main()
