"""Cohort selection for clinical trials (n2c2 2018 Track 1)."""
