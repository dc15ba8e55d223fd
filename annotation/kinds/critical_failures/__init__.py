"""What the `critical_failures` study kind (annotation/kinds/critical_failures/spec.py) owns beyond its spec:
the
item form's parsing and its submission (posted.py), the export rows (exports.py) and the agreement API
(api.py, mounted through the kind's `api_urls`). The engine reaches these only through the kind registry;
the kind's pages are in annotation/kinds/critical_failures/views.py."""

from annotation.base.registry import register
from annotation.kinds.critical_failures.name import AGREEMENT_API, KIND

register(
    KIND,
    label="Critical failures",
    description="Critical failures (How2Score, an L1/L2 pair)",
    spec=f"{__name__}.spec.CriticalFailures",
    agreement_api=AGREEMENT_API,
)
