"""What the `critical_failures` study kind (annotation/kinds/critical_failures/spec.py) owns beyond its spec:
the
item form's parsing and its submission (posted.py), the export rows (exports.py) and the agreement API
(api.py, mounted through the kind's `api_urls`). The engine reaches these only through the kind registry;
the kind's pages are in annotation/kinds/critical_failures/views.py."""

from annotation.base.registry import register
from annotation.kinds.critical_failures.spec import CriticalFailures

register(CriticalFailures())
