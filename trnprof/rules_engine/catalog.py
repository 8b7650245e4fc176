"""What rule SQL may read: the run's tables, the session tables (`run_job`: the manifest's job
metadata; `hardware`: the Trainium hardware table; `gpu_hardware`: the GPU families) and the
public stdlib views.
"""

from __future__ import annotations

from functools import lru_cache

from trnprof.schema import TABLE_COLUMNS
from trnprof.session_tables import DOCS as SESSION_TABLES
from trnprof.stdlib import ViewDef, load_views


@lru_cache(maxsize=1)
def stdlib_views() -> dict[str, ViewDef]:
    return {view.name: view for view in load_views() if view.public}


def readable_tables() -> list[str]:
    """Every name rule SQL may read."""
    return sorted(set(TABLE_COLUMNS) | set(stdlib_views()) | set(SESSION_TABLES))


def signal_names() -> dict[str, str]:
    """The flags of the `signals` view a rule may list under `requires`, with their meaning."""
    return dict(stdlib_views()["signals"].columns)
