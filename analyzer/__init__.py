"""ncclscope: finds out why multi-GPU PyTorch training is stuck or slow."""
__version__ = "0.1.0"
