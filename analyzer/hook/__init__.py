"""What runs inside the training processes: the collective tracer and its ``sitecustomize`` shim.

Nothing here may import from ``analyzer``: ``ncclscope run`` copies this folder next to the run
(``DIR/.ncclscope-site/_ncclscope_hook``) so that every rank imports it with only the standard
library and torch. ``records`` builds the JSON objects, ``tracer`` patches ``torch.distributed``
and writes ``DIR/ncclscope-rank<R>.jsonl`` from background threads, ``budget`` takes the wrappers
off above a rate of calls where Flight Recorder keeps the collectives.
"""
