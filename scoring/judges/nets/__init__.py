"""Our own torch implementations of published judge networks, parameter names matching their checkpoints.

Importing anything here imports torch: only worker processes do, through the adapters' loaders.
"""
