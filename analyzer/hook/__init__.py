"""What runs inside the training processes: the collective tracer and its ``sitecustomize`` shim.

Nothing here may import from ``analyzer``: ``ncclscope run`` copies this folder next to the run
(``DIR/.ncclscope-site/_ncclscope_hook``) so that every rank imports it with only the standard
library and torch. ``tracer`` patches ``torch.distributed`` and joins the parts that write
``DIR/ncclscope-rank<R>.jsonl``: ``calls`` (the wrapper, on the training thread), ``poller`` (completion,
heartbeats, stalls, dump requests, on a background thread) and ``writer`` (the records to disk, on
another); ``records`` builds the JSON objects, ``budget`` takes the wrappers off above a rate of calls
where Flight Recorder keeps the collectives, ``chaos`` makes each path raise on request (tests).
"""
