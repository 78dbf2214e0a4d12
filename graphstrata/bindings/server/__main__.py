"""``python -m graphstrata.bindings.server INDEX [options]``: the same as ``graphstrata serve``."""

import sys

from graphstrata.bindings.cli.main import main

sys.exit(main(["serve", *sys.argv[1:]]))
