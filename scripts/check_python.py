"""Say whether a Python interpreter can run the kit, before ``make setup`` builds a venv with it.

Run by the Makefile with the interpreter it is about to use (``$(PYTHON)``, or the existing ``.venv``'s).
Written for any Python 3 so that an old interpreter gets this message instead of a resolver error such as
"No matching distribution found for asgiref==3.13.0" half-way through a 1.4 GB install.

Exit codes: 0 supported · 3 unsupported (message on stderr). ``--quiet`` prints nothing.
"""

import sys

# pyproject.toml's requires-python is ">=3.11,<3.14"; keep the two in step (tests/unit/test_check_python.py).
MINIMUM = (3, 11)
BEYOND = (3, 14)
TESTED = ("3.11", "3.12")


def problem(version):
    """The reason ``version`` (a ``(major, minor)`` tuple) cannot run the kit, or ``None``."""
    if MINIMUM <= tuple(version[:2]) < BEYOND:
        return None
    # %-formatting on purpose: this file must parse on any interpreter a user may point make at.
    found = "%d.%d" % tuple(version[:2])
    return (
        "Python %s cannot run the kit: it needs Python >= %d.%d and < %d.%d (tested: %s).\n"
        "Install a supported Python and point make at it, for example:\n"
        "  make setup PYTHON=python3.12     (or: make demo PYTHON=/usr/bin/python3.11)\n"
        "On Ubuntu 22.04, whose default is 3.10: sudo apt-get install python3.11 python3.11-venv"
        % (found, MINIMUM[0], MINIMUM[1], BEYOND[0], BEYOND[1], ", ".join(TESTED))
    )


def main(argv):
    message = problem(sys.version_info)
    if message is None:
        return 0
    if "--quiet" not in argv:
        sys.stderr.write("setup: " + message + "\n")
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
