"""What the sweep driver asks the npusim binary: resolved hardware, zoo names, run flags."""

import functools
import json
import os
import subprocess


class NpusimError(Exception):
    """npusim refused a request (its message, minus the 'npusim: error: ' prefix)."""


def default_binary():
    """$NPUSIM, else build/sim/npusim of the checkout holding this script."""
    if os.environ.get("NPUSIM"):
        return os.environ["NPUSIM"]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(root, "build", "sim", "npusim")


def _call(npusim, args):
    r = subprocess.run([npusim] + args, capture_output=True, text=True)
    if r.returncode != 0:
        message = r.stderr.strip().removeprefix("npusim: error: ")
        raise NpusimError(message or f"npusim {' '.join(args)} exited with {r.returncode}")
    return r.stdout


@functools.lru_cache(maxsize=None)
def _resolved_hw_text(npusim, hw):
    return _call(npusim, ["presets", "--show", hw])


def resolved_hw(npusim, hw):
    """The hardware description `npusim run --hw hw` would use, every default filled in."""
    return json.loads(_resolved_hw_text(npusim, hw))


@functools.lru_cache(maxsize=None)
def zoo_names(npusim):
    return tuple(line.split()[0] for line in _call(npusim, ["zoo"]).splitlines() if line.strip())


@functools.lru_cache(maxsize=None)
def run_flags(npusim):
    """The long options `npusim run` accepts (from its --help)."""
    flags = set()
    for word in _call(npusim, ["run", "--help"]).split():
        if word.startswith("--"):
            flags.add(word[2:].split("=")[0].strip("[],"))
    return frozenset(flags)


@functools.lru_cache(maxsize=None)
def decoder_names(npusim):
    """The built-in decoders `npusim serve --workload` takes (npusim generate --list)."""
    return tuple(line.split()[0] for line in _call(npusim, ["generate", "--list"]).splitlines()
                 if line.strip())
