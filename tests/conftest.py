"""Shared test configuration: the hypothesis profiles, nothing else.

``ci`` is derandomized (the same examples on every run, so a failure in CI is
reproducible and a green run stays green) and is loaded whenever the ``CI``
environment variable is set; ``dev`` keeps hypothesis' random exploration.
Neither has a deadline: the first call of a test pays for imports and BLAS
warm-up, which would otherwise be reported as a flaky timing failure.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=100, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
