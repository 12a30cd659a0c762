"""Component ids, one place for all of them (pages and callbacks import these constants)."""
from __future__ import annotations

# app shell
RUN_KEY = "run-key"  # dcc.Store: the server-side key of the analysis on screen, nothing else
RUN_LABEL = "run-label"
LIVE_INTERVAL = "live-interval"
LIVE_BANNER = "live-banner"
NAV = "nav"
PENDING_KEY = "pending-key"  # dcc.Store: key of an analysis still being parsed (startup, upload)
JOB_POLL = "job-poll"  # dcc.Interval polling that job's status
JOB_STATUS = "job-status"

# overview
UPLOAD = "upload"
UPLOAD_STATUS = "upload-status"
UPLOAD_KEY = "upload-key"  # dcc.Store: the key of this page's last upload, whose outcome UPLOAD_STATUS says
OVERVIEW_BODY = "overview-body"
VERDICT_BANNER = "verdict-banner"

# topology
TOPO_COMM = "topo-comm"
TOPO_VIEW = "topo-view"
TOPO_CHANNEL = "topo-channel"
TOPO_GRAPH = "topo-graph"
TOPO_INFO = "topo-info"

# timeline
TL_PG = "tl-pg"
TL_AXIS = "tl-axis"
TL_GRAPH = "tl-graph"
TL_INFO = "tl-info"
TL_VIEW = "tl-view"
TL_COUNTS = "tl-counts"

# hotspots
HS_SHARE_BY = "hs-share-by"
HS_SHARE = "hs-share"
HS_BUSBW = "hs-busbw"
HS_WAIT = "hs-wait"
HS_INFO = "hs-info"
HS_VOLUME = "hs-volume"
HS_TOP = "hs-top"

# hang report
HANG_BODY = "hang-body"

# logs
LOG_FILE = "log-file"
LOG_RANK = "log-rank"
LOG_LEVEL = "log-level"
LOG_SUBSYS = "log-subsys"
LOG_SEARCH = "log-search"
LOG_TABLE = "log-table"
LOG_INFO = "log-info"
LOG_POLL = "log-poll"  # dcc.Interval: re-asks while the log index builds
LOG_SCROLL = "log-scroll"  # dummy output of the clientside scroll to the evidence line
LOG_TARGET = "log-target"  # dcc.Store: {"file", "line"} from an evidence link
LOG_FOCUS = "log-focus"  # dcc.Store: the line the page opened on (the link's, else the verdict's evidence), scrolled to
LOG_SHOW = "log-show"  # dcc.Checklist: line kinds hidden by default and shown on request (the hook's heartbeats)

# diff (two runs compared)
DIFF_A = "diff-a"  # dcc.Dropdown: the key of run A (the good one), among the analyses the server holds
DIFF_B = "diff-b"  # dcc.Dropdown: the key of run B (the bad one)
DIFF_BODY = "diff-body"
DIFF_BUSBW = "diff-busbw"
