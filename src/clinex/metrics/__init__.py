"""Metrics, one module per paper's metric."""
