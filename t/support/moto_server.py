"""moto's S3 server for the tests, with each write decided atomically.

moto checks If-Match / If-None-Match and then writes, with no lock between the two, on a
threaded server: two racing conditional writes can both pass. S3 decides each conditional
write atomically; this wrapper restores that by running writes one at a time (reads stay
concurrent). Usage: moto_server.py HOST PORT
"""

import sys
import threading

from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)

WRITES = {"PUT", "POST", "DELETE"}
write_lock = threading.Lock()
app = DomainDispatcherApplication(create_backend_app)


def atomic_writes(environ, start_response):
    if environ.get("REQUEST_METHOD") in WRITES:
        with write_lock:
            # Consume the whole response while holding the lock.
            return list(app(environ, start_response))
    return app(environ, start_response)


if __name__ == "__main__":
    host, port = sys.argv[1], int(sys.argv[2])
    run_simple(host, port, atomic_writes, threaded=True, request_handler=MotoRequestHandler)
