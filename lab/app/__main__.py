import sys

from lab.app import main

sys.exit(main())
