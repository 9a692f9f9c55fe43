"""Risk-of-bias evidence (Cochrane RoB 2, RoBuster scheme)."""
