"""``python -m nemo.lens.cli``: the same as the ``nemo-lens`` command."""

import sys

from nemo.lens.cli import main

if __name__ == "__main__":
    sys.exit(main())
