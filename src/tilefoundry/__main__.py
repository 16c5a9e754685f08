import sys

from tilefoundry.cli.main import main

sys.exit(main())
