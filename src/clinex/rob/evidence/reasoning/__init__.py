"""RoB 2 answers by expert reasoning: data (``reasoning.yaml``) plus small named rules.

* :mod:`.assertion` — negation and hedging of every cue (medspaCy ConText);
* :mod:`.facts` — sentences with sections, pattern findings, who blinding statements
  are about;
* :mod:`.counts` — randomised / analysed / lost participants per arm (numbers and
  phrasings in :mod:`.count_phrases`, the combined flow in :mod:`.participant_flow`);
* :mod:`.actors` — who a clause names (participants, deliverers, assessors, analysts);
* :mod:`.rules` — one function per way an expert answers a signalling question, one
  module per RoB 2 domain (:mod:`.randomisation`, :mod:`.awareness`, :mod:`.deviations`,
  :mod:`.missing_data`, :mod:`.measurement`, :mod:`.reporting`), the answer type in
  :mod:`.decision`;
* :mod:`.model` — :class:`RulesEvidenceModel`, the shipped default evidence model.
"""

from clinex.rob.evidence.reasoning.model import RulesEvidenceModel

__all__ = ["RulesEvidenceModel"]
