"""E2B(R3) ICSRs, part 2: the HL7 v3 XML of a batch of cases (issue 24: from :mod:`clinex.pv.e2b`).

The receiver and code-system constants, the sender's settings (:class:`E2BSettings`) and
:func:`build_batch`: ``PORR_IN049016UV`` messages inside the batch wrapper
``MCCI_IN200100UV01``, element numbers as comments beside the elements (module notes of
:mod:`clinex.pv.e2b`, which re-exports these names).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from datetime import date, datetime
from xml.etree import ElementTree as ET

from pydantic import BaseModel, ConfigDict, Field

from clinex.errors import InputError
from clinex.pv.e2b_case import Case, Drug, Reaction, fit

BATCH_RECEIVER = "ZZFDA"
"""N.1.4: the FDA's postmarket route (rejection rule R0004)."""
MESSAGE_RECEIVER = "CDER"
"""N.2.r.3: with N.1.4 = ZZFDA it must be CDER (rejection rule R0006)."""
ICSRS_PER_FILE = 100
"""Default number of ICSRs (``PORR_IN049016UV`` messages) per batch file."""
DEFAULT_SENDER_ORG = "UNSPECIFIED SENDER"
"""C.3.2 when ``--sender-org`` is not given (a warning says so)."""

_HL7 = "urn:hl7-org:v3"
_XSI = "http://www.w3.org/2001/XMLSchema-instance"
_SCHEMA_LOCATION = ("urn:hl7-org:v3 https://www.accessdata.fda.gov/icsr/schema/cvm/schemas/vich/"
                    "multicacheschemas/MCCI_IN200100UV01.xsd")
_UUID_NAMESPACE = uuid.UUID("4a7f0c2e-5b0e-4c4b-9a55-0e2b3c1e9d10")  # clinex's, for deterministic ids

# code systems (OIDs) of the ICH E2B(R3) implementation guide, as in the FDA examples
OID_BATCH_NUMBER = "2.16.840.1.113883.3.989.2.1.3.22"
OID_MESSAGE_ID = "2.16.840.1.113883.3.989.2.1.3.1"  # N.2.r.1 and C.1.1
OID_WORLDWIDE_ID = "2.16.840.1.113883.3.989.2.1.3.2"  # C.1.8.1
OID_BATCH_SENDER = "2.16.840.1.113883.3.989.2.1.3.13"
OID_BATCH_RECEIVER = "2.16.840.1.113883.3.989.2.1.3.14"
OID_MESSAGE_SENDER = "2.16.840.1.113883.3.989.2.1.3.11"
OID_MESSAGE_RECEIVER = "2.16.840.1.113883.3.989.2.1.3.12"
OID_MESSAGE_TYPE = "2.16.840.1.113883.3.989.2.1.1.1"
OID_REPORT_TYPE = "2.16.840.1.113883.3.989.2.1.1.2"
OID_FIRST_SENDER = "2.16.840.1.113883.3.989.2.1.1.3"
OID_QUALIFICATION = "2.16.840.1.113883.3.989.2.1.1.6"
OID_SENDER_TYPE = "2.16.840.1.113883.3.989.2.1.1.7"
OID_STUDY_TYPE = "2.16.840.1.113883.3.989.2.1.1.8"
OID_AGE_GROUP = "2.16.840.1.113883.3.989.2.1.1.9"
OID_OUTCOME = "2.16.840.1.113883.3.989.2.1.1.11"
OID_DRUG_ROLE = "2.16.840.1.113883.3.989.2.1.1.13"
OID_ROUTE = "2.16.840.1.113883.3.989.2.1.1.14"
OID_OBSERVATION = "2.16.840.1.113883.3.989.2.1.1.19"
OID_ORGANIZER = "2.16.840.1.113883.3.989.2.1.1.20"
OID_ASSIGNED_ROLE = "2.16.840.1.113883.3.989.2.1.1.21"
OID_RELATED_INVESTIGATION = "2.16.840.1.113883.3.989.2.1.1.22"
OID_CHARACTERISTIC = "2.16.840.1.113883.3.989.2.1.1.23"
OID_DOCUMENT = "2.16.840.1.113883.3.989.2.1.1.27"
OID_MEDDRA = "2.16.840.1.113883.6.163"
OID_COUNTRY = "1.0.3166.1.2.2"
OID_SEX = "1.0.5218"

_SERIOUSNESS = (  # E.i.3.2a-f: observation code, displayName
    ("34", "resultsInDeath"),
    ("21", "isLifeThreatening"),
    ("33", "requiresInpatientHospitalization"),
    ("35", "resultsInPersistentOrSignificantDisability"),
    ("12", "congenitalAnomalyBirthDefect"),
    ("26", "otherMedicallyImportantCondition"),
)
_AGE_GROUPS = {"0": "Foetus", "1": "Neonate", "2": "Infant", "3": "Child", "4": "Adolescent",
               "5": "Adult", "6": "Elderly"}
_STUDY_TYPES = {"1": "Clinical trials", "3": "Other studies"}



# --- settings ---------------------------------------------------------------------------------
_COUNTRY = re.compile(r"^[A-Z]{2}$")


class E2BSettings(BaseModel):
    """Who sends the reports, and when (the options of ``clinex pv e2b``).

    Attributes
    ----------
    sender_org : str
        C.3.2 (at most 100 characters); also the company part of C.1.1.
    sender_country : str
        C.3.4.5 and the country part of C.1.1: ISO 3166-1 alpha-2 (or ``EU``).
    sender_id : str or None
        N.1.3 / N.2.r.2 (at most 60 characters): the sender identifier agreed with the
        receiver (for the FDA, the one it approved); default ``sender_org`` without
        spaces or punctuation.
    received : date or None
        C.1.4 / C.1.5: the day the article came to the sender's attention; default the
        day of ``created``. Not after ``created``.
    created : datetime or None
        N.1.5, N.2.r.4, C.1.2: default now, local time with its UTC offset.
    per_file : int, default ICSRS_PER_FILE
        ICSRs per batch file.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    sender_org: str = DEFAULT_SENDER_ORG
    sender_country: str = "US"
    sender_id: str | None = None
    received: date | None = None
    created: datetime | None = None
    per_file: int = Field(default=ICSRS_PER_FILE, ge=1)

    def checked(self) -> E2BSettings:
        """A copy with defaults resolved, or :class:`InputError` naming the option."""
        org = " ".join(self.sender_org.split())
        if not org or len(org) > 100:
            raise InputError(f"--sender-org must have 1 to 100 characters; got {len(org)}", field="--sender-org")
        country = self.sender_country.strip().upper()
        if not _COUNTRY.match(country):
            raise InputError(f"--sender-country must be an ISO 3166-1 alpha-2 code such as US, DE or EU; "
                             f"got {self.sender_country!r}", field="--sender-country")
        sender_id = self.sender_id if self.sender_id is not None else slug(org)
        if not sender_id.strip() or len(sender_id) > 60:
            raise InputError(f"--sender-id must have 1 to 60 characters; got {len(sender_id)}", field="--sender-id")
        created = self.created or datetime.now().astimezone()
        if created.tzinfo is None:
            created = created.astimezone()
        received = self.received or created.date()
        if received > created.date():
            raise InputError(f"--received {received:%Y%m%d} is after today ({created:%Y%m%d}); "
                             "E2B dates may not lie in the future", field="--received")
        return self.model_copy(update={"sender_org": org, "sender_country": country, "sender_id": sender_id,
                                       "created": created, "received": received})


def slug(text: str) -> str:
    """Letters and digits only, upper case: the company part of C.1.1 (no dashes, ICH)."""
    return re.sub(r"[^A-Za-z0-9]", "", text).upper()[:40] or "SENDER"


# --- XML ----------------------------------------------------------------------------------------
def _q(tag: str) -> str:
    """Tags are written unprefixed; the root declares the HL7 namespace as the default."""
    return tag


def _el(parent: ET.Element, tag: str, attrib: dict[str, str] | None = None, text: str | None = None,
        note: str | None = None) -> ET.Element:
    """A child ``tag`` (HL7 namespace; ``xsi:type`` given as ``"type"``), with a comment after it."""
    attrs = {("xsi:type" if k == "type" else k): v for k, v in (attrib or {}).items()}
    el = ET.SubElement(parent, _q(tag), attrs)
    if text is not None:
        el.text = text
    if note:
        parent.append(ET.Comment(f" {note} "))
    return el


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y%m%d%H%M%S%z")


def _uid(*parts: str) -> str:
    return str(uuid.uuid5(_UUID_NAMESPACE, "/".join(parts)))


def _observation(parent: ET.Element, wrapper: str, code: str, display: str, value: dict[str, str],
                 text: str | None = None, note: str | None = None, type_code: str = "SBJ") -> ET.Element:
    obs = _el(_el(parent, wrapper, {"typeCode": type_code}), "observation", {"classCode": "OBS", "moodCode": "EVN"})
    _el(obs, "code", {"code": code, "codeSystem": OID_OBSERVATION, "displayName": display})
    _el(obs, "value", value, text, note)
    return obs


def _reporter(ie: ET.Element) -> None:
    """C.2.r: the article's author, unknown to clinex (nullFlavors the specification allows)."""
    rel = _el(ie, "outboundRelationship", {"typeCode": "SPRT"})
    _el(rel, "priorityNumber", {"value": "1"}, note="C.2.r.5: Primary Source for Regulatory Purposes")
    inv = _el(rel, "relatedInvestigation", {"classCode": "INVSTG", "moodCode": "EVN"})
    _el(inv, "code", {"code": "2", "codeSystem": OID_RELATED_INVESTIGATION, "displayName": "sourceReport"})
    ent = _el(_el(_el(_el(inv, "subjectOf2", {"typeCode": "SUBJ"}), "controlActEvent",
                      {"classCode": "CACT", "moodCode": "EVN"}), "author", {"typeCode": "AUT"}),
              "assignedEntity", {"classCode": "ASSIGNED"})
    _el(ent, "telecom", {"value": "mailto", "nullFlavor": "NASK"}, note="FDA.C.2.r.2.8: Reporter's Email")
    person = _el(ent, "assignedPerson", {"classCode": "PSN", "determinerCode": "INSTANCE"})
    name = _el(person, "name", note="C.2.r.1: the reporter is the article's author (see C.4.r.1)")
    _el(name, "given", {"nullFlavor": "NASK"}, note="C.2.r.1.2: Reporter's Given Name")
    _el(name, "family", {"nullFlavor": "NASK"}, note="C.2.r.1.4: Reporter's Family Name")
    _el(_el(person, "asQualifiedEntity", {"classCode": "QUAL"}), "code", {"nullFlavor": "UNK"},
        note="C.2.r.4: Qualification")
    _el(_el(_el(person, "asLocatedEntity", {"classCode": "LOCE"}), "location",
            {"classCode": "COUNTRY", "determinerCode": "INSTANCE"}), "code", {"nullFlavor": "UNK"},
        note="C.2.r.3: Reporter's Country Code")


def _sender(ie: ET.Element, s: E2BSettings) -> None:
    """C.3: the sender (a pharmaceutical company) with its organisation and country."""
    ent = _el(_el(_el(_el(ie, "subjectOf1", {"typeCode": "SUBJ"}), "controlActEvent",
                      {"classCode": "CACT", "moodCode": "EVN"}), "author", {"typeCode": "AUT"}),
              "assignedEntity", {"classCode": "ASSIGNED"})
    _el(ent, "code", {"code": "1", "codeSystem": OID_SENDER_TYPE}, note="C.3.1: Sender Type (1: pharmaceutical company)")
    person = _el(ent, "assignedPerson", {"classCode": "PSN", "determinerCode": "INSTANCE"},
                 note="C.3.3, C.3.4.1-4, C.3.4.6-8 (the person responsible, address, telephone, e-mail): "
                      "to be completed by the sender")
    _el(_el(_el(person, "asLocatedEntity", {"classCode": "LOCE"}), "location",
            {"classCode": "COUNTRY", "determinerCode": "INSTANCE"}), "code",
        {"code": str(s.sender_country), "codeSystem": OID_COUNTRY}, note="C.3.4.5: Sender's Country Code")
    org = _el(_el(_el(ent, "representedOrganization", {"classCode": "ORG", "determinerCode": "INSTANCE"}),
                  "assignedEntity", {"classCode": "ASSIGNED"}), "representedOrganization",
              {"classCode": "ORG", "determinerCode": "INSTANCE"})
    _el(org, "name", text=fit(s.sender_org, "C.3.2"), note="C.3.2: Sender's Organisation")


def _patient(role: ET.Element, case: Case) -> None:
    p = case.patient
    player = _el(role, "player1", {"classCode": "PSN", "determinerCode": "INSTANCE"})
    _el(player, "name", {"nullFlavor": "UNK"}, note="D.1: Patient (name or initials): not in the article")
    if p.sex:
        _el(player, "administrativeGenderCode", {"code": p.sex, "displayName": "Male" if p.sex == "1" else "Female",
                                                 "codeSystem": OID_SEX}, note="D.5: Sex")
    else:
        _el(player, "administrativeGenderCode", {"nullFlavor": "UNK"}, note="D.5: Sex (not stated)")
    if case.study_type:
        study = _el(_el(role, "subjectOf1", {"typeCode": "SBJ"}), "researchStudy",
                    {"classCode": "CLNTRL", "moodCode": "EVN"})
        _el(study, "code", {"code": case.study_type, "displayName": _STUDY_TYPES[case.study_type],
                            "codeSystem": OID_STUDY_TYPE},
            note="C.5.4: Study Type Where Reaction(s) / Event(s) Were Observed (from the publication type)")
    if p.age:
        _observation(role, "subjectOf2", "3", "age", {"type": "PQ", "value": p.age[0], "unit": p.age[1]},
                     note="D.2.2a / D.2.2b: Age at Time of Onset of Reaction / Event (number, unit)")
    if p.age_group:
        _observation(role, "subjectOf2", "4", "ageGroup",
                     {"type": "CE", "code": p.age_group, "displayName": _AGE_GROUPS[p.age_group],
                      "codeSystem": OID_AGE_GROUP}, note="D.2.3: Patient Age Group (as per reporter)")
    org = _el(_el(role, "subjectOf2", {"typeCode": "SBJ"}), "organizer", {"classCode": "CATEGORY", "moodCode": "EVN"})
    _el(org, "code", {"code": "1", "codeSystem": OID_ORGANIZER,
                      "displayName": "relevantMedicalHistoryAndConcurrentConditions"})
    obs = _el(_el(org, "component", {"typeCode": "COMP"}), "observation", {"classCode": "OBS", "moodCode": "EVN"})
    _el(obs, "code", {"code": "18", "codeSystem": OID_OBSERVATION, "displayName": "historyAndConcurrentConditionText"})
    if p.history:
        _el(obs, "value", {"type": "ED"}, fit("; ".join(p.history), "D.7.2"),
            note="D.7.2: Text for Relevant Medical History and Concurrent Conditions")
    else:
        _el(obs, "value", {"type": "ED", "nullFlavor": "UNK"}, note="D.7.2: not stated")


def _reaction(role: ET.Element, case_id: str, i: int, r: Reaction) -> str:
    obs = _el(_el(role, "subjectOf2", {"typeCode": "SBJ"}), "observation", {"classCode": "OBS", "moodCode": "EVN"})
    rid = _uid(case_id, "reaction", str(i))
    _el(obs, "id", {"root": rid})
    _el(obs, "code", {"code": "29", "codeSystem": OID_OBSERVATION, "displayName": "reaction"})
    value = _el(obs, "value", {"type": "CE", "codeSystem": OID_MEDDRA},
                note="E.i.2.1a / E.i.2.1b: MedDRA version and code: TO BE CODED by the sender (MedDRA needs "
                     "a licence; no nullFlavor is allowed)")
    _el(value, "originalText", {"language": "eng"}, fit(r.text, "E.i.1.1a"),
        note="E.i.1.1a / E.i.1.1b: Reaction / Event as Reported by the Primary Source, and its language")
    for (code, display), flag in zip(_SERIOUSNESS, (r.fatal, r.life_threatening, False, False, False, False),
                                     strict=True):
        _observation(obs, "outboundRelationship2", code, display,
                     {"type": "BL", "value": "true"} if flag else {"type": "BL", "nullFlavor": "NI"},
                     type_code="PERT")
    obs.append(ET.Comment(" E.i.3.2a-f: seriousness criteria: NI (no information) unless the Effect states it; "
                          "to be assessed by the sender "))
    _observation(obs, "outboundRelationship2", "27", "outcome",
                 {"type": "CE", "code": "5", "displayName": "fatal", "codeSystem": OID_OUTCOME} if r.fatal else
                 {"type": "CE", "code": "0", "displayName": "unknown", "codeSystem": OID_OUTCOME},
                 note="E.i.7: Outcome of Reaction / Event at the Time of Last Observation", type_code="PERT")
    return rid


def _drug(organizer: ET.Element, case_id: str, k: int, d: Drug) -> str:
    sa = _el(_el(organizer, "component", {"typeCode": "COMP"}), "substanceAdministration",
             {"classCode": "SBADM", "moodCode": "EVN"})
    did = _uid(case_id, "drug", str(k))
    _el(sa, "id", {"root": did})
    product = _el(_el(_el(sa, "consumable", {"typeCode": "CSM"}), "instanceOfKind", {"classCode": "INST"}),
                  "kindOfProduct", {"classCode": "MMAT", "determinerCode": "KIND"})
    _el(product, "name", text=fit(d.text, "G.k.2.2"),
        note="G.k.2.2: Medicinal Product Name as Reported by the Primary Source")
    for name in d.substances:
        substance = _el(_el(product, "ingredient", {"classCode": "ACTI"}), "ingredientSubstance",
                        {"classCode": "MMAT", "determinerCode": "KIND"})
        _el(substance, "name", text=fit(name, "G.k.2.3.r.1"),
            note="G.k.2.3.r.1: Substance / Specified Substance Name (the drug gazetteer's name)")
    if d.dosage or d.route:
        dose = _el(_el(sa, "outboundRelationship2", {"typeCode": "COMP"}), "substanceAdministration",
                   {"classCode": "SBADM", "moodCode": "EVN"})
        if d.dosage:
            _el(dose, "text", text=fit(d.dosage, "G.k.4.r.8"), note="G.k.4.r.8: Dosage Text")
        if d.route:
            route = _el(dose, "routeCode", {"codeSystem": OID_ROUTE})
            _el(route, "originalText", text=fit(d.route, "G.k.4.r.10.1"),
                note="G.k.4.r.10.1: Route of Administration (free text)")
    for indication in d.indications:
        obs = _el(_el(sa, "inboundRelationship", {"typeCode": "RSON"}), "observation",
                  {"classCode": "OBS", "moodCode": "EVN"})
        _el(obs, "code", {"code": "19", "codeSystem": OID_OBSERVATION, "displayName": "indication"})
        value = _el(obs, "value", {"type": "CE", "codeSystem": OID_MEDDRA},
                    note="G.k.7.r.2a / G.k.7.r.2b: MedDRA version and code of the indication (optional)")
        _el(value, "originalText", text=fit(indication, "G.k.7.r.1"),
            note="G.k.7.r.1: Indication as Reported by the Primary Source")
        _el(_el(_el(obs, "performer", {"typeCode": "PRF"}), "assignedEntity", {"classCode": "ASSIGNED"}), "code",
            {"code": "3", "codeSystem": OID_ASSIGNED_ROLE, "displayName": "sourceReporter"})
    return did


def _icsr(case: Case, case_id: str, s: E2BSettings) -> ET.Element:
    """One ``PORR_IN049016UV`` message."""
    assert s.created is not None and s.received is not None
    created = _ts(s.created)
    msg = ET.Element(_q("PORR_IN049016UV"))
    _el(msg, "id", {"extension": case_id, "root": OID_MESSAGE_ID}, note="N.2.r.1: Message Identifier (= C.1.1)")
    _el(msg, "creationTime", {"value": created}, note="N.2.r.4: Date of Message Creation (= C.1.2)")
    _el(msg, "interactionId", {"extension": "PORR_IN049016UV", "root": "2.16.840.1.113883.1.6"})
    _el(msg, "processingCode", {"code": "P"})
    _el(msg, "processingModeCode", {"code": "I"})
    _el(msg, "acceptAckCode", {"code": "AL"})
    _el(_el(_el(msg, "receiver", {"typeCode": "RCV"}), "device", {"classCode": "DEV", "determinerCode": "INSTANCE"}),
        "id", {"extension": MESSAGE_RECEIVER, "root": OID_MESSAGE_RECEIVER}, note="N.2.r.3: Message Receiver Identifier")
    _el(_el(_el(msg, "sender", {"typeCode": "SND"}), "device", {"classCode": "DEV", "determinerCode": "INSTANCE"}),
        "id", {"extension": str(s.sender_id), "root": OID_MESSAGE_SENDER}, note="N.2.r.2: Message Sender Identifier")
    cap = _el(msg, "controlActProcess", {"classCode": "CACT", "moodCode": "EVN"})
    _el(cap, "code", {"code": "PORR_TE049016UV", "codeSystem": "2.16.840.1.113883.1.18"})
    _el(cap, "effectiveTime", {"value": created}, note="C.1.2: Date of Creation")
    ie = _el(_el(cap, "subject", {"typeCode": "SUBJ"}), "investigationEvent", {"classCode": "INVSTG", "moodCode": "EVN"})
    _el(ie, "id", {"extension": case_id, "root": OID_MESSAGE_ID},
        note="C.1.1: Sender's (case) Safety Report Unique Identifier")
    _el(ie, "id", {"extension": case_id, "root": OID_WORLDWIDE_ID}, note="C.1.8.1: Worldwide Unique Case Identification")
    _el(ie, "code", {"code": "PAT_ADV_EVNT", "codeSystem": "2.16.840.1.113883.5.4"})
    _el(ie, "text", {"mediaType": "text/plain"}, fit(case.text, "H.1"),
        note="H.1: Case Narrative: the article's text (title and abstract)")
    _el(ie, "statusCode", {"code": "active"})
    _el(_el(ie, "effectiveTime"), "low", {"value": f"{s.received:%Y%m%d}"},
        note="C.1.4: Date Report Was First Received from Source")
    _el(ie, "availabilityTime", {"value": f"{s.received:%Y%m%d}"},
        note="C.1.5: Date of Most Recent Information for This Report")
    doc = _el(_el(ie, "reference", {"typeCode": "REFR"}), "document", {"classCode": "DOC", "moodCode": "EVN"})
    _el(doc, "code", {"code": "2", "codeSystem": OID_DOCUMENT, "displayName": "literatureReference"})
    _el(doc, "bibliographicDesignationText", text=case.citation(), note="C.4.r.1: Literature Reference(s)")

    aea = _el(_el(ie, "component", {"typeCode": "COMP"}), "adverseEventAssessment",
              {"classCode": "INVSTG", "moodCode": "EVN"})
    role = _el(_el(aea, "subject1", {"typeCode": "SBJ"}), "primaryRole", {"classCode": "INVSBJ"})
    _patient(role, case)
    for i, reaction in enumerate(case.reactions, 1):
        _reaction(role, case_id, i, reaction)
    organizer = _el(_el(role, "subjectOf2", {"typeCode": "SBJ"}), "organizer",
                    {"classCode": "CATEGORY", "moodCode": "EVN"})
    _el(organizer, "code", {"code": "4", "codeSystem": OID_ORGANIZER, "displayName": "drugInformation"},
        note="G.k: Drug(s) Information")
    drug_ids = [_drug(organizer, case_id, k, d) for k, d in enumerate(case.drugs, 1)]
    for did in drug_ids:
        ca = _el(_el(aea, "component", {"typeCode": "COMP"}), "causalityAssessment",
                 {"classCode": "OBS", "moodCode": "EVN"})
        _el(ca, "code", {"code": "20", "codeSystem": OID_OBSERVATION, "displayName": "interventionCharacterization"})
        _el(ca, "value", {"type": "CE", "code": "1", "displayName": "Suspect", "codeSystem": OID_DRUG_ROLE},
            note="G.k.1: Characterisation of Drug Role")
        _el(_el(_el(ca, "subject2", {"typeCode": "SUBJ"}), "productUseReference",
                {"classCode": "SBADM", "moodCode": "EVN"}), "id", {"root": did})

    docs = _el(_el(ie, "component", {"typeCode": "COMP"}), "observationEvent", {"classCode": "OBS", "moodCode": "EVN"})
    _el(docs, "code", {"code": "1", "codeSystem": OID_OBSERVATION, "displayName": "additionalDocumentsAvailable"})
    _el(docs, "value", {"type": "BL", "value": "false"}, note="C.1.6.1: Are Additional Documents Available?")
    ie.append(ET.Comment(" C.1.7 (expedited report?) and FDA.C.1.7.1, FDA.C.1.12: to be completed by the sender "))
    first = _el(_el(ie, "outboundRelationship", {"typeCode": "SPRT"}), "relatedInvestigation",
                {"classCode": "INVSTG", "moodCode": "EVN"})
    _el(first, "code", {"code": "1", "codeSystem": OID_RELATED_INVESTIGATION, "displayName": "initialReport"})
    _el(_el(_el(_el(_el(first, "subjectOf2", {"typeCode": "SUBJ"}), "controlActEvent",
                    {"classCode": "CACT", "moodCode": "EVN"}), "author", {"typeCode": "AUT"}), "assignedEntity",
            {"classCode": "ASSIGNED"}), "code", {"code": "2", "displayName": "other", "codeSystem": OID_FIRST_SENDER},
        note="C.1.8.2: First Sender of This Case")
    _reporter(ie)
    _sender(ie, s)
    kind = _el(_el(ie, "subjectOf2", {"typeCode": "SUBJ"}), "investigationCharacteristic",
               {"classCode": "OBS", "moodCode": "EVN"})
    _el(kind, "code", {"code": "1", "codeSystem": OID_CHARACTERISTIC, "displayName": "ICH ReportType"})
    report_type = "2" if case.study_type else "1"
    _el(kind, "value", {"type": "CE", "code": report_type, "codeSystem": OID_REPORT_TYPE,
                        "displayName": "Report from study" if case.study_type else "Spontaneous report"},
        note="C.1.3: Type of Report")
    other = _el(_el(ie, "subjectOf2", {"typeCode": "SUBJ"}), "investigationCharacteristic",
                {"classCode": "OBS", "moodCode": "EVN"})
    _el(other, "code", {"code": "2", "codeSystem": OID_CHARACTERISTIC, "displayName": "otherCaseIds"})
    _el(other, "value", {"type": "BL", "nullFlavor": "NI"},
        note="C.1.9.1: Other Case Identifiers in Previous Transmissions")
    return msg


def build_batch(cases: Sequence[tuple[Case, str]], settings: E2BSettings, batch_number: str) -> bytes:
    """One E2B(R3) batch file: ``MCCI_IN200100UV01`` around one message per case.

    Parameters
    ----------
    cases : sequence of (Case, str)
        Each case with its C.1.1 identifier (unique per ICSR).
    settings : E2BSettings
        Resolved with :meth:`E2BSettings.checked`.
    batch_number : str
        N.1.2.

    Returns
    -------
    bytes
        The XML document (UTF-8, with its declaration), indented.
    """
    s = settings.checked()
    assert s.created is not None
    root = ET.Element(_q("MCCI_IN200100UV01"), {"xmlns": _HL7, "xmlns:xsi": _XSI, "ITSVersion": "XML_1.0",
                                                  "xsi:schemaLocation": _SCHEMA_LOCATION})
    root.append(ET.Comment(" Draft ICH E2B(R3) ICSRs written by clinex pv e2b from extracted literature events: "
                           "code every reaction in MedDRA (E.i.2.1a/b) and complete the elements marked "
                           "'to be completed' before submission "))
    _el(root, "id", {"extension": fit(batch_number, "N.1.2"), "root": OID_BATCH_NUMBER}, note="N.1.2: Batch Number")
    _el(root, "creationTime", {"value": _ts(s.created)}, note="N.1.5: Date of Batch Transmission")
    _el(root, "responseModeCode", {"code": "D"})
    _el(root, "interactionId", {"extension": "MCCI_IN200100UV01", "root": "2.16.840.1.113883.1.6"})
    _el(root, "name", {"code": "1", "displayName": "ichicsr", "codeSystem": OID_MESSAGE_TYPE},
        note="N.1.1: Types of Message in batch")
    for case, case_id in cases:
        root.append(_icsr(case, case_id, s))
    _el(_el(_el(root, "receiver", {"typeCode": "RCV"}), "device", {"classCode": "DEV", "determinerCode": "INSTANCE"}),
        "id", {"extension": BATCH_RECEIVER, "root": OID_BATCH_RECEIVER}, note="N.1.4: Batch Receiver Identifier")
    _el(_el(_el(root, "sender", {"typeCode": "SND"}), "device", {"classCode": "DEV", "determinerCode": "INSTANCE"}),
        "id", {"extension": str(s.sender_id), "root": OID_BATCH_SENDER}, note="N.1.3: Batch Sender Identifier")
    ET.indent(root, space="\t")
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"
