"""``python -m graphstrata.bindings.server INDEX [options]``: the same as ``graphstrata serve``."""

import sys

from graphstrata.bindings.server.command import main

sys.exit(main(sys.argv[1:]))
