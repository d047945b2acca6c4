"""Moved to the language layer: this name is babelprobe.text.dictionary itself (one module, so
its recorded warnings and caches are shared by old and new imports)."""

import sys

from babelprobe.text import dictionary

sys.modules[__name__] = dictionary
