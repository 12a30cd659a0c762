"""Which port a dashboard listens on: the one asked for, or, when another process holds it, a free one."""
from __future__ import annotations

import socket

DASHBOARD_PORT = 8050
NEXT_TRIES = 20  # the ports after a taken one tried in turn, before the system is asked for any free one


def port_taken(port: int, host: str = "127.0.0.1") -> str | None:
    """Why ``host:port`` cannot be bound now (another process holds it), or None when it is free."""
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(fam, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as e:
            return str(e.strerror or e)
    return None


def free_port(preferred: int = DASHBOARD_PORT, host: str = "127.0.0.1") -> tuple[int, str | None]:
    """(a port free on ``host`` now, why ``preferred`` was not it: None when it was free).

    The ports after ``preferred`` are tried in turn (a second dashboard lands on 8051, easy to guess and to
    forward), then the system picks one; ``preferred`` 0 asks the system at once. The port is free when
    checked: a process that binds it meanwhile makes the server's own bind fail, with its own message."""
    if preferred:
        why = port_taken(preferred, host)
        if why is None:
            return preferred, None
        for port in range(preferred + 1, min(preferred + 1 + NEXT_TRIES, 65536)):
            if port_taken(port, host) is None:
                return port, why
    else:
        why = None
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(fam, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1]), why


def url(host: str, port: int) -> str:
    """``http://host:port/``, an IPv6 address in brackets."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"
