"""What the `critical_failures` study kind (annotation/kinds/critical_failures.py) owns beyond its spec: the
item form's parsing and its submission (posted.py), the export rows (exports.py) and the agreement API
(api.py, mounted through the kind's `api_urls`). The engine reaches these only through the kind registry;
the kind's pages are in annotation/views/critical_failures.py."""
