"""lint_main.py: the command line the tests/lint checks share: `NAME.py ROOT` runs the
check's self-test (it must catch what was planted), then the check on ROOT; prints one line
per offence and a count; exit 0 clean, 1 offences or a failed self-test, 2 usage."""

import os
import sys


def run(name, check, self_test, what):
    if len(sys.argv) != 2:
        print(f"usage: {name}.py ROOT")
        return 2
    if not self_test():
        return 1
    bad = check(os.path.abspath(sys.argv[1]))
    for b in bad:
        print(b)
    print(f"{name}: {len(bad)} {what}")
    return 1 if bad else 0
