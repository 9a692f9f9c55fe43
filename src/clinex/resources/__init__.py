"""Packaged data files: rules, lexicons, criteria, models."""
