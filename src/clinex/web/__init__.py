"""The clinex web app (FastAPI): ``clinex serve``."""
