"""``python -m aimux_ops.gateway``: the ``aimux-gateway`` command."""

import sys

from .cli import main

sys.exit(main())
