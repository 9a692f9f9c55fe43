"""The outermost layer of the web app: Host check, cross-site request refusal, security headers.

:class:`Security` wraps the whole application (outside Starlette's own error middleware,
so that even a 500 carries the headers) and, for every HTTP request:

1. **Host.** The ``Host`` header must be ``host[:port]`` (:func:`parse_host`; anything
   else names no host) and name this server: ``localhost``, ``127.0.0.1``, ``::1``, the
   address the connection came in on (the ``--host`` given, or the interface's address
   when bound to all of them), or a name in the allow-list (``clinex serve --allow-host``,
   ``CLINEX_WEB_ALLOWED_HOSTS``; ``*`` allows any, ``*.example.org`` a domain's names).
   Otherwise **400**: a page on another site that points its own name at this machine
   (DNS rebinding) is not served.
2. **Cross-site requests** (every method but ``GET``, ``HEAD``, ``OPTIONS``): refused
   with **403** when ``Sec-Fetch-Site`` says the request came from another site
   (anything but ``same-origin`` or ``none``), or ``Origin`` is not this server's own
   (``null`` included): its scheme must be the one this server serves (``http``, or
   ``https`` behind TLS) and its name and port those of the ``Host`` header, a missing
   port being the scheme's default. A body a plain HTML form can send without a CORS
   preflight (``application/x-www-form-urlencoded``, ``multipart/form-data``,
   ``text/plain``; the Fetch standard's CORS-safelisted request-header rule) is refused
   with **415** unless ``Sec-Fetch-Site: same-origin`` or a matching ``Origin`` shows it
   came from the app's own page; other clients send ``application/octet-stream``, the
   file's own type, ``application/json``, or no ``Content-Type``.
3. **Headers on every response:** ``Content-Security-Policy`` (nothing from another
   host; an HTML page's inline scripts are allowed only by their SHA-256 hash, so the
   offline ``/docs`` page's one inline script runs and nothing injected would),
   ``X-Frame-Options: DENY``, ``X-Content-Type-Options: nosniff``,
   ``Referrer-Policy: no-referrer`` and ``Cross-Origin-Resource-Policy: same-origin``.

References: OWASP Cross-Site Request Forgery Prevention Cheat Sheet ("Verifying Origin
with standard headers", "Fetch Metadata headers"); W3C Fetch Metadata Request Headers;
W3C Content Security Policy Level 3 (hash sources); RFC 9110 section 7.2 (Host);
RFC 6454 (the Origin header and comparing origins).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import re

from clinex.errors import InputError
from clinex.web.guard import ASGIApp, Message, Receive, Scope, Send, error_content, send_error

__all__ = ["FORM_TYPES", "LOOPBACK_HOSTS", "SECURITY_HEADERS", "Security", "content_security_policy", "parse_host"]

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
"""Host names every server accepts, whatever it is bound to."""

FORM_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"})
"""The body types an HTML form (or a no-cors fetch) sends to another site without a preflight."""

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_SAME_ORIGIN_FETCH = frozenset({"same-origin", "none"})  # "none": typed in, a bookmark
_MAX_HTML = 1024 * 1024  # bytes of an HTML answer held back to hash its inline scripts
_INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.DOTALL | re.IGNORECASE)

_FIXED_HEADERS = (
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-resource-policy", b"same-origin"),
)

# a Host value (RFC 9110 section 7.2 / RFC 3986 section 3.2.2): a bracketed IPv6 address, or a
# name or IPv4 address of letters, digits, "-" and "_" in dot-separated labels; then ":port"
_HOST = re.compile(r"(?:\[([0-9a-f:.]+)\]|([a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?))(?::([0-9]{1,5}))?")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def content_security_policy(script_hashes: list[str] | tuple[str, ...] = ()) -> str:
    """The ``Content-Security-Policy`` of every answer.

    Everything comes from this server (``'self'``); scripts only from its files, plus the
    inline scripts whose hashes are given. Styles may be inline: the RoB report is shown in
    a ``srcdoc`` frame, which inherits the page's policy, and carries its own ``<style>``;
    ReDoc's components inject ``<style>`` elements. Images may be ``data:`` (Swagger UI's
    icons) and ``blob:`` (the traffic-light plot the page fetches); ReDoc's search runs in a
    ``blob:`` worker. No page may frame this app (``frame-ancestors 'none'``).

    Parameters
    ----------
    script_hashes : sequence of str
        ``sha256-<base64>`` sources of inline scripts allowed to run.
    """
    scripts = " ".join(["'self'", *(f"'{h}'" for h in script_hashes)])
    return (f"default-src 'self'; script-src {scripts}; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; "
            "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


_CSP_HEADER = (b"content-security-policy", content_security_policy().encode("ascii"))

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (*_FIXED_HEADERS, _CSP_HEADER)
"""The security headers of every answer that is not an HTML page (an HTML page's policy adds
its inline scripts' hashes): the one set :class:`Security` adds, and the answers
:mod:`clinex.web.server` writes itself (header timeout, malformed request) carry."""


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def parse_host(value: str) -> tuple[str, int | None] | None:
    """``(name, port)`` of a ``Host`` value (``[::1]:8000`` → ``("::1", 8000)``), name in
    lower case without a trailing dot; None when the value is not ``host[:port]``.

    Strict on purpose: ``host`` is a bracketed IPv6 address or dot-separated labels of
    letters, digits, ``-`` and ``_`` (a name or an IPv4 address), ``port`` one to five
    digits, so that a value such as ``localhost:80@evil`` (userinfo-like) or
    ``localhost evil`` names no host at all rather than the part before the odd character.

    Parameters
    ----------
    value : str
        The header's value.

    Returns
    -------
    tuple of (str, int or None), or None
        The name (an IPv6 address without its brackets) and the port, if one is given.

    Examples
    --------
    >>> parse_host("LocalHost.:8000"), parse_host("[::1]"), parse_host("localhost:80@evil")
    (('localhost', 8000), ('::1', None), None)

    References
    ----------
    RFC 9110 section 7.2 (``Host = uri-host [ ":" port ]``); RFC 3986 section 3.2.2 (host)
    and 3.2.3 (port).
    """
    m = _HOST.fullmatch(value.strip().lower())
    if m is None:
        return None
    if m.group(1) is not None:
        try:
            ipaddress.IPv6Address(m.group(1))
        except ValueError:
            return None
    port = int(m.group(3)) if m.group(3) is not None else None
    if port is not None and port > 65535:
        return None
    return (m.group(1) or m.group(2)).rstrip("."), port


def _origin(value: str) -> tuple[str, str, int | None] | None:
    """``(scheme, name, port)`` of an ``Origin`` value (``scheme "://" host [":" port]``;
    RFC 6454 section 7), or None (``null``, anything else)."""
    scheme, sep, rest = value.strip().lower().partition("://")
    parsed = parse_host(rest) if sep and scheme in _DEFAULT_PORTS else None
    return None if parsed is None else (scheme, *parsed)


class Security:
    """ASGI middleware: Host check (400), cross-site refusal (403, 415), security headers.

    Parameters
    ----------
    app : ASGI application
        The application it wraps.
    allowed_hosts : sequence of str
        Host names accepted besides :data:`LOOPBACK_HOSTS` and the address the connection
        came in on; ``*`` accepts any, ``*.example.org`` any name under ``example.org``.
    """

    def __init__(self, app: ASGIApp, *, allowed_hosts: tuple[str, ...] = ()) -> None:
        self.app = app
        self.allowed = frozenset(h.lower().rstrip(".") for h in allowed_hosts if not h.startswith("*"))
        self.any_host = "*" in allowed_hosts
        self.domains = tuple(h[1:].lower() for h in allowed_hosts if h.startswith("*."))

    def host_allowed(self, host: str, scope: Scope) -> bool:
        """Whether the ``Host`` value names this server (with ``*`` allowed: any value)."""
        if self.any_host:
            return True
        parsed = parse_host(host)
        if parsed is None:
            return False
        name = parsed[0]
        server = str((scope.get("server") or ("",))[0] or "").lower()
        return (name in LOOPBACK_HOSTS or name == server or name in self.allowed
                or any(name.endswith(d) for d in self.domains))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            status, message, field = refusal
            await send_error(send, status, error_content("CLX001", message, field),
                             {"Connection": "close", **{k.decode(): v.decode() for k, v in SECURITY_HEADERS}})
            return
        await self.app(scope, receive, _with_headers(send))

    def _refusal(self, scope: Scope) -> tuple[int, str, str] | None:
        """(status, message, field) of a request refused here, or None."""
        host = _header(scope, b"host")
        if host is not None and not self.host_allowed(host, scope):
            return 400, str(InputError(
                "does not name this server (allowed: localhost, 127.0.0.1, ::1, the address the "
                "server listens on, and names given with clinex serve --allow-host or CLINEX_WEB_ALLOWED_HOSTS)",
                field="Host")), "Host"
        if scope.get("method") in _SAFE_METHODS:
            return None
        fetch_site = _header(scope, b"sec-fetch-site")
        if fetch_site is not None and fetch_site.strip().lower() not in _SAME_ORIGIN_FETCH:
            return 403, str(InputError(
                f"cross-site request refused (Sec-Fetch-Site: {fetch_site.strip().lower()[:20]}); only this "
                "server's own page may send requests that change anything", field="Sec-Fetch-Site")), "Sec-Fetch-Site"
        origin = _header(scope, b"origin")
        own = origin is not None and host is not None and _same_origin(origin, host, scope)
        if origin is not None and not own:
            return 403, str(InputError(
                "cross-site request refused (Origin is not this server); only this server's own page may send "
                "requests that change anything", field="Origin")), "Origin"
        media = (_header(scope, b"content-type") or "").split(";", 1)[0].strip().lower()
        if media in FORM_TYPES and not (own or (fetch_site or "").strip().lower() == "same-origin"):
            return 415, str(InputError(
                f"{media} is refused here (a form on another site can send it); send the body as "
                "application/octet-stream (any file), application/pdf, application/xml or application/json "
                "(curl: -H 'content-type: application/octet-stream')", field="Content-Type")), "Content-Type"
        return None


def _same_origin(origin: str, host: str, scope: Scope) -> bool:
    """Whether ``Origin`` is this server's own: the scheme it serves (``http`` unless it
    serves TLS), the name and the port of the ``Host`` header (a missing port is the
    scheme's default), as a browser compares origins (RFC 6454 section 5)."""
    theirs = _origin(origin)
    ours = parse_host(host)
    if theirs is None or ours is None:
        return False
    scheme = str(scope.get("scheme") or "http").lower()
    default = _DEFAULT_PORTS.get(scheme)
    return theirs[0] == scheme and theirs[1] == ours[0] and (theirs[2] or default) == (ours[1] or default)


def _with_headers(send: Send) -> Send:
    """``send`` adding the security headers; an HTML answer is held back (up to 1 MB) so
    that its inline scripts' hashes can go into its policy."""
    held: list[Message] = []
    chunks: list[bytes] = []

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _OURS]
            message = {**message, "headers": headers + list(_FIXED_HEADERS)}
            ctype = next((v for k, v in headers if k.lower() == b"content-type"), b"")
            if ctype.lower().startswith(b"text/html"):
                held.append(message)
                return
            message["headers"].append(_CSP_HEADER)
            await send(message)
            return
        if held and message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            size = sum(len(c) for c in chunks)
            if message.get("more_body", False) and size <= _MAX_HTML:
                return
            body = b"".join(chunks)
            hashes = [] if message.get("more_body", False) else _script_hashes(body)
            start = held.pop()
            start["headers"].append((b"content-security-policy", content_security_policy(hashes).encode("ascii")))
            chunks.clear()
            await send(start)
            await send({**message, "body": body})
            return
        await send(message)

    return wrapped


_OURS = frozenset({b"content-security-policy", *(k for k, _ in _FIXED_HEADERS)})


def _script_hashes(html: bytes) -> list[str]:
    """CSP ``sha256-`` sources of the inline ``<script>`` elements of an HTML page."""
    out: list[str] = []
    for m in _INLINE_SCRIPT.finditer(html):
        digest = base64.b64encode(hashlib.sha256(m.group(1)).digest()).decode("ascii")
        out.append(f"sha256-{digest}")
    return out

