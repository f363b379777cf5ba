"""``python -m nemo.lens.codegen``: the same as ``nemo-lens generate``."""

import sys

from nemo.lens.codegen.command import main

if __name__ == "__main__":
    sys.exit(main())
