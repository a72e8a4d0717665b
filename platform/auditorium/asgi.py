"""ASGI entry point: HTTP through Django, websockets under /ws/ through Channels."""

import os
import sys
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditorium.settings")

import django  # noqa: E402

django.setup(set_prefix=False)

from auditorium.asgi_handler import ThreadedASGIHandler  # noqa: E402

django_asgi_app = ThreadedASGIHandler()

from auditorium.dbpool import install_reporting, report_if_asked  # noqa: E402
from common.deferred import deferred_rows  # noqa: E402

install_reporting()

from asgiref.sync import sync_to_async  # noqa: E402
from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from auditorium.asgi_handler import ConnectionWatchASGI  # noqa: E402
from auditorium.routing import websocket_urlpatterns  # noqa: E402
from auditorium.ws_origin import SameOriginWebSocket  # noqa: E402
from common.limits import BodyLimitASGI  # noqa: E402


async def lifespan(scope, receive, send):
    """Answer the server's start-up and shutdown messages (uvicorn warns that lifespan is unsupported
    when an application refuses the scope). Django is ready above; queued audio notes are written at shutdown."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            # A real server from here on (every launch path sends the startup message; an embedded
            # test server need not): the audio notes are queued and written in batches (common/deferred.py).
            deferred_rows.enable()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await sync_to_async(deferred_rows.flush, thread_sensitive=False)()
            report_if_asked()
            await send({"type": "lifespan.shutdown.complete"})
            return


application = ProtocolTypeRouter(
    {
        "lifespan": lifespan,
        "http": BodyLimitASGI(ConnectionWatchASGI(django_asgi_app)),
        "websocket": SameOriginWebSocket(AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))),
    }
)
