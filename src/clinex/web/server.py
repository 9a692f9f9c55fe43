"""The HTTP server of ``clinex serve``: uvicorn with a header read timeout.

uvicorn closes a kept-alive connection that stays idle ``timeout_keep_alive`` seconds
(5 s), but sets no limit on how long a client may take to send a request's headers: a
client that sends one byte every few seconds holds its connection (and file descriptor)
for as long as it likes. :class:`HeaderTimeoutProtocol` adds that limit to uvicorn's h11
protocol: a connection with no request in progress (new, or between two requests) that
has not sent a complete request head within ``header_timeout`` seconds is closed, with a
408 answer in the app's error shape when it had sent part of one. A request head that is
not valid HTTP (a ``Content-Length`` that is not a number, a malformed line) is answered
400 in the same shape, not with uvicorn's plain text; both carry the security headers of
every answer (:data:`clinex.web.security.SECURITY_HEADERS`). The same timer covers
the rest of a body that no request is reading any more (a refused upload that keeps
dripping). The body of a request being handled is timed by the app itself
(:class:`clinex.web.guard.BodyDeadline`).

The default, 20 s, is the initial header timeout of Apache httpd's ``mod_reqtimeout``
(``RequestReadTimeout header=20-40``); a real client sends its headers in one packet.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from clinex.errors import InputError
from clinex.web.guard import content_length_message, error_content, setting
from clinex.web.security import SECURITY_HEADERS

__all__ = ["HEADER_TIMEOUT", "HeaderTimeoutProtocol", "header_timeout_protocol", "raw_error", "serve"]

HEADER_TIMEOUT = 20
"""Seconds a connection may take to send a complete request head (``CLINEX_WEB_HEADER_TIMEOUT``)."""

_REASONS = {400: b"Bad Request", 408: b"Request Timeout"}
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 - names of "every interface", never a Host


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on request heads (see the module docstring).

    ``header_timeout`` (seconds) is a class attribute; :func:`header_timeout_protocol`
    makes a subclass with the value set.
    """

    header_timeout: float = HEADER_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.transport.is_closing():
            self._disarm()
        elif self.cycle is not None and not self.cycle.response_complete:
            self._disarm()  # a request is being handled: its body is the app's to time
        else:
            self._arm()  # part of the next request head, or the rest of a body no one reads

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.header_timeout, self._head_timed_out)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or (self.cycle is not None and not self.cycle.response_complete):
            return
        partial = self.conn.their_state is h11.IDLE and bool(self.conn.trailing_data[0])
        if partial and self.conn.our_state is h11.IDLE:
            message = str(InputError(
                f"request headers not received within {self.header_timeout:g} s (CLINEX_WEB_HEADER_TIMEOUT)",
                field="headers"))
            self.transport.write(raw_error(408, message, "headers"))
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """Answer a request that is not valid HTTP (h11 refused its head) in the app's error
        shape, with the security headers, and close (uvicorn's own answer is plain text).

        uvicorn calls this while handling h11's ``RemoteProtocolError``, which says what was wrong.
        """
        problem = str(sys.exception() or "")
        if problem == "bad Content-Length":  # h11: not a number
            self.transport.write(raw_error(400, content_length_message(), "body"))
        else:  # h11's other messages may quote the request: not repeated
            message = str(InputError("not a valid HTTP request (a malformed request line or header)",
                                     field="headers"))
            self.transport.write(raw_error(400, message, "headers"))
        self.transport.close()


def raw_error(status: int, message: str, field: str | None) -> bytes:
    """A whole HTTP/1.1 answer in the app's error shape (``CLX001``), for the protocol to
    write itself: the security headers of every answer
    (:data:`clinex.web.security.SECURITY_HEADERS`) and ``Connection: close``.

    Parameters
    ----------
    status : int
        400 or 408.
    message : str
        The ``[CLX001] ...`` message.
    field : str or None
        The field it names.

    Returns
    -------
    bytes
        The status line, the headers and the JSON body.
    """
    body = json.dumps(error_content("CLX001", message, field)).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode("ascii")),
               (b"connection", b"close"), *SECURITY_HEADERS]
    head = b"HTTP/1.1 %d %s\r\n" % (status, _REASONS[status])
    return head + b"".join(k + b": " + v + b"\r\n" for k, v in headers) + b"\r\n" + body


def header_timeout_protocol(seconds: int | None = None) -> type[HeaderTimeoutProtocol]:
    """:class:`HeaderTimeoutProtocol` with ``header_timeout`` set.

    Parameters
    ----------
    seconds : int, optional
        Seconds a connection may take to send a request head (default
        ``CLINEX_WEB_HEADER_TIMEOUT``, else :data:`HEADER_TIMEOUT`, 20).

    Raises
    ------
    InputError
        The value is below 1 or not a whole number.
    """
    value = setting(seconds, "CLINEX_WEB_HEADER_TIMEOUT", HEADER_TIMEOUT, 1)
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout": value})


def serve(host: str, port: int, *, allowed_hosts: tuple[str, ...] = (), header_timeout: int | None = None,
          body_timeout: int | None = None, per_client: int | None = None, log_level: str = "info") -> None:
    """Run the web app with uvicorn on ``host:port`` until interrupted.

    Parameters
    ----------
    host : str
        Interface to listen on; accepted as a ``Host`` header too unless it names every
        interface (``0.0.0.0``, ``::``).
    port : int
        TCP port.
    allowed_hosts : tuple of str
        More names the ``Host`` header may carry (:class:`clinex.web.security.Security`).
    header_timeout : int, optional
        Seconds to send a request head (:func:`header_timeout_protocol`).
    body_timeout, per_client : int, optional
        See :func:`clinex.web.app.create_app`.
    log_level : str, default "info"
        uvicorn's log level.

    Raises
    ------
    InputError
        A setting below its minimum or not a number.
    """
    import uvicorn

    from clinex.web.app import create_app

    hosts = (*allowed_hosts, host) if host not in _WILDCARDS else allowed_hosts
    app = create_app(allowed_hosts=hosts or None, body_timeout=body_timeout, per_client=per_client)
    uvicorn.run(app, host=host, port=port, http=header_timeout_protocol(header_timeout), log_level=log_level,
                server_header=False)
