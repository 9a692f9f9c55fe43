"""Readers and writers, one module per format; every reader names file and line on error."""
