"""RoCE GIDs as NCCL prints them in an IB completion error (2.21+: ``localGid ::ffff:10.30.1.11 remoteGids
::ffff:10.30.1.12``; some releases glue ``remoteGids`` to the address): whether the pair NCCL used can route between
nodes. A link-local GID (``fe80::``, a RoCE v1 or default index 0 entry) does not leave its subnet; an IPv4-mapped
(``::ffff:a.b.c.d``) or a global / unique-local IPv6 GID is the address the NIC routes with, so a retry-exceeded error
between two of them is the fabric's or the peer's, not the GID choice (NCCL_IB_GID_INDEX)."""
from __future__ import annotations

import re

GIDS_RE = re.compile(r"localGid\s*(?P<l>[0-9A-Fa-f:.]{2,45})\s*remoteGids?\s*(?P<r>[0-9A-Fa-f:.]{2,45})")


def routable(gid: str) -> bool:
    g = gid.strip().lower()
    if not g or g.startswith("fe80") or g.strip(":0.") == "":
        return False
    if g.startswith("::ffff:"):
        return g[7:].count(".") == 3 and not g[7:].startswith(("0.", "169.254."))
    return ":" in g


def shown_routable(text: str) -> bool:
    """The message shows both GIDs and both can route (False when it shows none)."""
    m = GIDS_RE.search(text)
    return m is not None and routable(m.group("l")) and routable(m.group("r"))
