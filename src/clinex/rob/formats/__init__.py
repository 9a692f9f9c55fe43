"""Trial-report input for RoB 2: :func:`.load.load_document` (a reader from :mod:`clinex.io`
chosen by suffix, then RoB section detection and sentences, :mod:`.structure`) and the tagtog
export of the RoB corpus (:mod:`.tagtog`)."""
