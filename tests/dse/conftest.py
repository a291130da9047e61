"""Shared helpers of the sweep-driver tests: the npusim binary (from $NPUSIM, set by CTest) and a
way to run scripts/dse.py as a user does."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "scripts")
sys.path.insert(0, SCRIPTS)


@pytest.fixture(scope="session")
def npusim():
    path = os.environ.get("NPUSIM", os.path.join(ROOT, "build", "sim", "npusim"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"npusim binary not found at {path} (set NPUSIM)")
    return path


def write_spec(directory, spec, name="spec.json"):
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(spec, f, indent=1)
    return path


def run_script(script, args, npusim, timeout=300):
    env = dict(os.environ, NPUSIM=npusim)
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, script)] + args, env=env,
                          capture_output=True, text=True, timeout=timeout)


def dse(args, npusim, timeout=300):
    return run_script("dse.py", args + ["--no-progress"], npusim, timeout)
