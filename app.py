"""The lab's entry point (`make demo`): the Gradio app on http://127.0.0.1:7860 (see docs/app.md).

python app.py [--preset NAME] [--host ADDR] [--port N]
"""

import sys

from lab.app import main

if __name__ == "__main__":
    sys.exit(main())
