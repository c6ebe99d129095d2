# SPDX-License-Identifier: GPL-3.0-or-later
"""Hypothesis profiles for the whole suite.

* ``ci`` (loaded when the ``CI`` environment variable is set, as on the CI runner): the
  examples are derived from each test's name (``derandomize``, which also means no example
  database), so a CI run is reproducible and cannot turn red by the luck of the draw; no
  per-example deadline either, so a slow shared runner cannot fail a test on timing alone;
* ``dev`` (otherwise): random examples, so local runs keep exploring.

``HYPOTHESIS_PROFILE=ci make test`` runs the CI profile locally.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)
