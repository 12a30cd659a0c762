"""``NCCL_TOPO_DUMP_FILE`` (``<system>``) and ``NCCL_GRAPH_DUMP_FILE`` (``<graphs>``) XML.

Parsed with the standard library's ElementTree, which expands no external entities; size is
bounded by the caller. Graph ids: 0 ring, 1 tree, 2 collnet-chain, 3 nvls, 4 collnet-direct.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from .records import TopoXml

GRAPH_NAMES = {"0": "ring", "1": "tree", "2": "collnet_chain", "3": "nvls", "4": "collnet_direct"}


def parse_topo_xml(data: bytes, file: str) -> TopoXml:
    """One streaming pass over the elements (``XMLPullParser`` start events): linear in the file
    whatever its nesting. ``root.iter`` inside ``root.iter`` walked every nested subtree again, so
    40,000 nested elements took 13 s. An ``nvlink`` belongs to the innermost ``gpu`` around it, a
    ``channel`` to the innermost ``graph``, a channel's entries are its direct children."""
    if b"<!ENTITY" in data or b"<!DOCTYPE" in data:
        raise ValueError("XML with a DOCTYPE or entities is refused")
    parser: Any = ET.XMLPullParser(events=("start", "end"))
    gpus: list[dict] = []
    nics: list[dict] = []
    graphs: list[dict] = []
    root_tag: str | None = None
    open_tags: list[str] = []
    open_gpus: list[list[dict]] = []  # the nvlink lists of the gpus open now, innermost last
    open_graphs: list[list[list[dict]]] = []  # the channel lists of the graphs open now
    open_channel: list[list[dict] | None] = []  # per open element: its entries when it is a channel
    try:
        for at in range(0, len(data), 1 << 20):
            parser.feed(data[at:at + (1 << 20)])
            for event, elem in parser.read_events():
                root_tag = _event(event, elem, root_tag, open_tags, gpus, nics, graphs, open_gpus,
                                  open_graphs, open_channel)
        parser.close()
        for event, elem in parser.read_events():
            root_tag = _event(event, elem, root_tag, open_tags, gpus, nics, graphs, open_gpus, open_graphs,
                              open_channel)
    except ET.ParseError as e:
        raise ValueError(f"not well-formed XML: {e}") from None
    if root_tag not in ("system", "graphs"):
        raise ValueError(f"XML root <{root_tag}> is neither <system> nor <graphs>")
    if root_tag == "system":
        return TopoXml(file, 1, "", "system", gpus, nics, [])
    return TopoXml(file, 1, "", "graphs", [], [], graphs)


def _event(event: str, elem: ET.Element, root_tag: str | None, open_tags: list[str], gpus: list[dict],
           nics: list[dict], graphs: list[dict], open_gpus: list[list[dict]], open_graphs: list[list[list[dict]]],
           open_channel: list[list[dict] | None]) -> str | None:
    """Apply one pull-parser event to the lists being built; returns the root's tag."""
    tag = elem.tag
    if event == "end":
        open_tags.pop()
        open_channel.pop()
        if tag == "gpu" and root_tag == "system":
            open_gpus.pop()
        elif tag == "graph" and root_tag == "graphs":
            open_graphs.pop()
        elem.clear()  # the attributes were taken at the start: keep no tree
        return root_tag
    if root_tag is None:
        root_tag = tag
    parent_channel = open_channel[-1] if open_channel else None
    if parent_channel is not None:
        parent_channel.append({"tag": tag, **elem.attrib})
    entries: list[dict] | None = None
    if root_tag == "system":
        if tag == "gpu":
            links: list[dict] = []
            gpus.append({**elem.attrib, "nvlinks": links})
            open_gpus.append(links)
        elif tag == "nvlink" and open_gpus:
            open_gpus[-1].append(dict(elem.attrib))
        elif tag == "net":
            nics.append(dict(elem.attrib))
    elif root_tag == "graphs":
        if tag == "graph":
            channels: list[list[dict]] = []
            graphs.append({**elem.attrib, "name": GRAPH_NAMES.get(elem.attrib.get("id", ""), "graph"),
                           "channels": channels})
            open_graphs.append(channels)
        elif tag == "channel" and open_graphs:
            entries = []
            open_graphs[-1].append(entries)
    open_tags.append(tag)
    open_channel.append(entries)
    return root_tag
