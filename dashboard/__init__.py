"""The ncclscope dashboard: a Dash app over the analyzer's model (``create_app`` in ``app.py``)."""
