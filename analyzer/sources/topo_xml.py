"""``NCCL_TOPO_DUMP_FILE`` (``<system>``) and ``NCCL_GRAPH_DUMP_FILE`` (``<graphs>``) XML.

Parsed with the standard library's ElementTree, which expands no external entities; size is
bounded by the caller. Graph ids: 0 ring, 1 tree, 2 collnet-chain, 3 nvls, 4 collnet-direct.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

from .records import TopoXml

GRAPH_NAMES = {"0": "ring", "1": "tree", "2": "collnet_chain", "3": "nvls", "4": "collnet_direct"}


def parse_topo_xml(data: bytes, file: str) -> TopoXml:
    if b"<!ENTITY" in data or b"<!DOCTYPE" in data:
        raise ValueError("XML with a DOCTYPE or entities is refused")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        raise ValueError(f"not well-formed XML: {e}") from None
    gpus, nics, graphs = [], [], []
    if root.tag == "system":
        for gpu in root.iter("gpu"):
            links = [dict(n.attrib) for n in gpu.iter("nvlink")]
            gpus.append({**gpu.attrib, "nvlinks": links})
        for net in root.iter("net"):
            nics.append(dict(net.attrib))
        kind = "system"
    elif root.tag == "graphs":
        for g in root.iter("graph"):
            channels = []
            for ch in g.iter("channel"):
                channels.append([{"tag": n.tag, **n.attrib} for n in ch])
            graphs.append({**g.attrib, "name": GRAPH_NAMES.get(g.attrib.get("id", ""), "graph"), "channels": channels})
        kind = "graphs"
    else:
        raise ValueError(f"XML root <{root.tag}> is neither <system> nor <graphs>")
    return TopoXml(file, 1, "", kind, gpus, nics, graphs)
