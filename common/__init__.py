"""Code the apps share that is not the project's wiring: errors and roles, the API's error shape and input
parsing, caches, sessions and the channel layer on SQLite, request and upload limits, sign-in throttling,
the listening record, CSV files, debounced and precompiled work, crowd label aggregation.

It imports no app (annotation, arena, scoring) and nothing of the project package (platform/auditorium:
settings, URLs, ASGI/WSGI, Celery, the database pool); the apps and the project package import it
(tests/platform/test_structure.py).
"""
