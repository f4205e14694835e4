import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
application = get_wsgi_application()

# A production site states how many proxies stand in front of it, or does not start (the lock-out counts per client
# address: docs/site.md, Throttling). Imported once the apps are loaded.
from leaderboard.accounts.throttle import require_stated_proxies  # noqa: E402

require_stated_proxies()
