import sys

from .exporter import main

sys.exit(main())
