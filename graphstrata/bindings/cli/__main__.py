"""``python -m graphstrata.bindings.cli``: the ``graphstrata`` command."""

import sys

from graphstrata.bindings.cli.main import main

sys.exit(main())
