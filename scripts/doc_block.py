"""Replaces the generated block of a markdown file: the text between two marker comments, which
scripts such as studies.py and multicore_scaling.py regenerate from real runs."""

import sys


def replace_block(path, begin, end, text, prog):
    """Writes `text` between the lines `begin` and `end` of `path`; exits naming `prog` when the
    file has no such block."""
    with open(path) as f:
        doc = f.read()
    if begin not in doc or end not in doc:
        sys.exit("%s: %s has no %s ... %s block" % (prog, path, begin, end))
    head, rest = doc.split(begin, 1)
    tail = rest.split(end, 1)[1]
    with open(path, "w") as f:
        f.write(head + begin + "\n\n" + text + "\n" + end + tail)
