import sys

from ._launch import main

sys.exit(main())
