import os
import sys
from pathlib import Path

# platform/ holds this package; make it importable however the server was started.
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditorium.settings")

from auditorium.dbpool import threads_from_gunicorn  # noqa: E402

# gthread serves --threads requests at once per process: the database pool is sized from that number.
threads_from_gunicorn()

from django.core.wsgi import get_wsgi_application  # noqa: E402

application = get_wsgi_application()

from auditorium.dbpool import install_reporting  # noqa: E402

install_reporting()
