"""A TCP proxy on loopback for fault tests: it forwards to a server (PostgreSQL) until told to
cut, then drops every connection and refuses new ones until restored.

`cut_on` cuts by itself once the client has sent a byte pattern a given number of times (the
second `INSERT INTO executions`, say): a fault at a chosen point of a run, not at a chosen time.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass


@dataclass
class CutOn:
    """Cut when the client has sent `pattern` for the `count`-th time."""

    pattern: bytes
    count: int = 1


class TcpProxy:
    def __init__(self, target_host: str, target_port: int, cut_on: CutOn | None = None) -> None:
        self._target = (target_host, target_port)
        self._cut_on = cut_on
        self._seen = 0
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self.port = 0
        self.cuts = 0
        self.cut_event = threading.Event()  # set at each cut
        self._listen()

    @property
    def host(self) -> str:
        return "127.0.0.1"

    def _listen(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # closed by cut()
                return
            try:
                server = socket.create_connection(self._target, timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                if self._listener is not listener:  # cut meanwhile
                    client.close()
                    server.close()
                    continue
                self._sockets.update((client, server))
            threading.Thread(target=self._pipe, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, False), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, from_client: bool) -> None:
        try:
            while data := source.recv(65536):
                if from_client and self._should_cut(data):
                    self.cut()
                    return
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                _close(end)

    def _should_cut(self, data: bytes) -> bool:
        if self._cut_on is None:
            return False
        with self._lock:
            self._seen += data.count(self._cut_on.pattern)
            if self._seen >= self._cut_on.count:
                self._cut_on = None  # once
                return True
        return False

    def cut(self) -> None:
        """Drop every connection and refuse new ones (the port is closed) until `restore`."""
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._sockets = self._sockets, set()
        if listener is not None:
            _close(listener)
        for end in sockets:
            _close(end)
        self.cuts += 1
        self.cut_event.set()

    def restore(self) -> None:
        """Accept connections again, on the same port."""
        with self._lock:
            if self._listener is not None:
                return
        self._listen()

    def close(self) -> None:
        self.cut()


def _close(end: socket.socket) -> None:
    with contextlib.suppress(OSError):
        end.shutdown(socket.SHUT_RDWR)
    end.close()
