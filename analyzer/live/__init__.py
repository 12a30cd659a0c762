"""Live monitoring of a run folder: tail its files, judge stalls, raise alerts."""
