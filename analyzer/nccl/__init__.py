"""What ncclscope knows about NCCL and PyTorch's use of it, as plain data and pure functions.

One vocabulary of collective names (``ops``), of datatypes (``dtypes``), nccl-tests' bus bandwidth
factors (``busbw``), the known environment variables (``envvars``) and the costly ones
(``risky_settings``), and the knowledge base of failures (``failures``, read from
``failures.toml``; ``prefilter`` gives each pattern the literals it cannot match without). This
package sits below everything else in ncclscope: it imports nothing from the rest of it, and
nothing heavier than the standard library.
"""
