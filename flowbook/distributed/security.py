"""Who can reach the listeners flowbook starts: loopback by default, TLS through Dask.

A Dask scheduler or worker runs whatever functions a client sends it, so an
open port is a remote shell for anyone who can reach it.  flowbook therefore:

- **binds loopback unless told otherwise**: ``Server.create_local_server``
  listens on 127.0.0.1 only (scheduler, worker and Dask's dashboard); a
  ``tf.train.Server`` binds exactly the host its ClusterSpec address names,
  and its scheduler's dashboard is on 127.0.0.1 (:data:`DASHBOARD`);
- **takes TLS from Dask**: ``security=`` on ``tf.train.Server`` and
  ``create_local_server`` is a ``distributed.security.Security``, or a dict
  of PEM paths (``{"ca_file": ..., "cert": ..., "key": ...}``, see
  :func:`make_security`).  With TLS the addresses are ``tls://`` ones, the
  target is ``dask://tls://host:port``, and every listener and connection
  requires a certificate signed by the CA.  A session opened on a target a
  Server of this process made uses that Server's security
  (:func:`security_for`); elsewhere, Dask's own configuration
  (``DASK_DISTRIBUTED__COMM__TLS__CA_FILE`` and friends) applies, as for any
  Dask client;
- **warns about exposed plain listeners**: binding a host other than
  loopback without TLS logs a warning, once per address
  (:func:`warn_if_exposed`).

State: :data:`_SECURITY` maps the scheduler addresses this process's Servers
started to their ``Security``; :data:`_WARNED` holds the addresses already
warned about.  Both are guarded by :data:`_LOCK`.

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("localhost")
    (True, True, True)
    >>> is_loopback("0.0.0.0"), is_loopback(""), is_loopback("10.1.2.3")
    (False, False, False)
"""

from __future__ import annotations

import ipaddress
import logging
import threading
from typing import Any

__all__ = [
    "DASHBOARD",
    "LOOPBACK",
    "is_loopback",
    "make_security",
    "protocol_of",
    "register",
    "security_for",
    "warn_if_exposed",
]

LOOPBACK = "127.0.0.1"  # where flowbook's own listeners go unless an address is named
DASHBOARD = f"{LOOPBACK}:0"  # Dask's dashboard: loopback, a free port

_LOCK = threading.Lock()
_SECURITY: dict[str, Any] = {}  # scheduler address -> the Security its Servers use
_WARNED: set[str] = set()  # addresses already warned about

_log = logging.getLogger("flowbook.distributed")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an IP) is this machine's loopback interface only."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # "", a wildcard or another machine's name


def make_security(security: Any) -> Any:
    """A ``distributed.security.Security`` for ``security``, or None for plain TCP.

    ``security`` is None, a ``Security`` (used as given), or a dict of PEM
    file paths: ``ca_file`` (the CA that signs every certificate), ``cert``
    and ``key`` (this process's certificate and key, used for the scheduler,
    the workers and the clients alike), or Dask's own ``tls_*`` keyword
    names.  A dict always requires encryption.
    """
    if security is None:
        return None
    from distributed.security import Security  # lazy: dask is an optional extra

    if isinstance(security, Security):
        return security
    if not isinstance(security, dict):
        raise TypeError(
            "security= is a distributed.security.Security or a dict of PEM paths "
            f"(ca_file, cert, key), not {type(security).__name__}"
        )
    given = dict(security)
    ca, cert, key = given.pop("ca_file", None), given.pop("cert", None), given.pop("key", None)
    kwargs: dict[str, Any] = {"require_encryption": True}
    if ca:
        kwargs["tls_ca_file"] = ca
    for role in ("client", "scheduler", "worker") if cert else ():
        kwargs[f"tls_{role}_cert"] = cert
        kwargs[f"tls_{role}_key"] = key
    kwargs.update(given)
    return Security(**kwargs)


def protocol_of(security: Any) -> str:
    """``"tls"`` when ``security`` requires encryption, else ``"tcp"``."""
    return "tls" if security is not None and security.require_encryption else "tcp"


def register(address: str, security: Any) -> None:
    """Remember that the scheduler at ``address`` is reached with ``security``."""
    if security is not None:
        with _LOCK:
            _SECURITY[address] = security


def security_for(address: str) -> Any:
    """The ``Security`` a Server of this process uses for ``address``, else None (Dask's config)."""
    with _LOCK:
        return _SECURITY.get(address)


def warn_if_exposed(address: str, what: str) -> bool:
    """Log a warning (once per address) when ``address`` is plain TCP beyond loopback.

    ``address`` is a Dask address (``tcp://host:port``) or ``host:port``;
    returns whether it warned now.

    >>> warn_if_exposed("tcp://127.0.0.1:8786", "the scheduler")
    False
    """
    protocol, _, rest = address.rpartition("://")
    if protocol in ("tls", "inproc"):
        return False
    host = rest.rpartition(":")[0] if ":" in rest else rest
    if is_loopback(host):
        return False
    with _LOCK:
        if address in _WARNED:
            return False
        _WARNED.add(address)
    _log.warning(
        "%s listens on %s without TLS: anyone who can reach it can run code in this process. "
        "Pass security= (a distributed.security.Security or {'ca_file', 'cert', 'key'}) "
        "or bind 127.0.0.1.",
        what,
        address,
    )
    return True
