"""The 26 GAVEL checklist items: the one place where they are defined.

Every other part of gavel (loaders, prompts, agent configurations, figures) takes items from here.
Each item has

* ``key``        a short canonical identifier (``filing_date``), also the folder name suffix the
                 Gavel-Agent uses for its per-item runs (``01_filing_date``);
* ``name``       the spelling with spaces used by summary checklists, judge files and ``human.json``;
* ``underscore`` the spelling with underscores used by chunk-by-chunk and agent runs;
* ``label``      a short human label for figures;
* ``group``      one of the nine groups of the paper's Appendix B;
* ``usually_single``  whether the item normally holds one value (the scoring rules do not depend on it:
                 a pair is compared as single-valued when both sides hold exactly one value);
* ``definition`` what the item holds, in our own words.

The definitions follow the meaning of the paper's Appendix B (adapted there from ExpertLongBench),
rewritten for this project.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class UnknownItemError(KeyError):
    """Raised for a checklist item name that matches none of the 26 items or their known variants."""

    def __str__(self) -> str:  # KeyError quotes its argument; give a readable message instead
        return str(self.args[0]) if self.args else "unknown checklist item"


@dataclass(frozen=True)
class Group:
    number: int
    key: str
    label: str


@dataclass(frozen=True)
class Item:
    number: int
    key: str
    name: str
    label: str
    group: str
    usually_single: bool
    definition: str

    @property
    def underscore(self) -> str:
        return self.name.replace(" ", "_")

    @property
    def slug(self) -> str:
        """Folder name of the Gavel-Agent's per-item run, e.g. ``01_filing_date``."""
        return f"{self.number:02d}_{self.key}"


GROUPS: tuple[Group, ...] = (
    Group(1, "basic_case_info", "Basic case information"),
    Group(2, "legal_foundation", "Legal foundation"),
    Group(3, "judge_info", "Judge"),
    Group(4, "related_cases", "Related cases"),
    Group(5, "filings_proceedings", "Filings and proceedings"),
    Group(6, "decrees", "Decrees"),
    Group(7, "settlements", "Settlements"),
    Group(8, "monitoring", "Monitoring"),
    Group(9, "context", "Context"),
)

ITEMS: tuple[Item, ...] = (
    Item(1, "filing_date", "Filing Date", "Filing date", "basic_case_info", True,
         "The date on which the lawsuit was first brought before a court."),
    Item(2, "parties", "Who are the Parties", "Parties", "basic_case_info", False,
         "Each plaintiff and each defendant, with the role, office or position that makes them a party. "
         "Name them concretely (for example 'the county sheriff', 'the students' parents'), not with "
         "bare procedural labels such as 'the plaintiffs'."),
    Item(3, "class_action", "Class Action or Individual Plaintiffs", "Class action vs. individual",
         "basic_case_info", True,
         "Whether the plaintiffs sue as a class (or seek to) or as individuals, with a short description "
         "of who they are."),
    Item(4, "type_of_counsel", "Type of Counsel", "Type of counsel", "basic_case_info", False,
         "The kind of lawyers on each side, as a short category (private firm, public-interest "
         "nonprofit, government lawyers, self-represented), naming the organisation in parentheses "
         "where known, e.g. 'Public-interest nonprofit (ACLU)'."),
    Item(5, "cause_of_action", "Cause of Action", "Cause of action", "legal_foundation", False,
         "The legal vehicle through which the claims are brought, i.e. how the plaintiffs are allowed to "
         "sue: a statute that gives a right to sue (such as 42 U.S.C. § 1983, the FTCA, Title II of the "
         "ADA) or a court-made vehicle (such as a Bivens action)."),
    Item(6, "statutory_basis", "Statutory or Constitutional Basis for the Case",
         "Statutory/constitutional basis", "legal_foundation", False,
         "The substantive rights said to be violated, i.e. what law was broken: constitutional "
         "provisions or clauses (e.g. Fourteenth Amendment equal protection) and statutory rights "
         "(e.g. Section 504 of the Rehabilitation Act)."),
    Item(7, "remedy_sought", "Remedy Sought", "Remedy sought", "legal_foundation", False,
         "The relief each party asks the court for (not what the court granted and not what the parties "
         "agreed), including relief a defendant requests."),
    Item(8, "judge_name", "First and Last name of Judge", "Judge name", "judge_info", True,
         "First and last names of the judges who handled the case, leaving out Supreme Court Justices."),
    Item(9, "consolidated_cases", "Consolidated Cases Noted", "Consolidated cases", "related_cases", False,
         "Other cases joined with this one for common proceedings."),
    Item(10, "related_cases", "Related Cases Listed by Their Case Code Number", "Related cases",
         "related_cases", False,
         "Other cases mentioned as connected to this one, identified by their case code (docket) numbers."),
    Item(11, "important_filings", "Note Important Filings", "Important filings", "filings_proceedings",
         False,
         "The significant motions and requests filed, such as motions for a temporary restraining order "
         "or preliminary injunction, to dismiss, or for summary judgment."),
    Item(12, "court_rulings", "Court Rulings", "Court rulings", "filings_proceedings", False,
         "The court's decisions on significant filings: dismissal, summary judgment, preliminary relief, "
         "class certification, attorneys' fees and similar (not amended complaints or statements of "
         "interest)."),
    Item(13, "reported_opinions", "All Reported Opinions Cited with Shortened Bluebook Citation",
         "Reported opinions", "filings_proceedings", False,
         "Citations of the case's reported opinions in short Bluebook form (e.g. '2020 WL 4218003'), "
         "adding case name, court or date only for an opinion from another case."),
    Item(14, "trials", "Trials", "Trials", "filings_proceedings", False,
         "Anything about trial proceedings: when trials were scheduled or held, their outcome, and "
         "trial-related motions and rulings."),
    Item(15, "appeals", "Appeal", "Appeals", "filings_proceedings", False,
         "Whether any party appealed, who appealed, to which court, and how the appeal came out."),
    Item(16, "decree_terms", "Significant Terms of Decrees", "Decree terms", "decrees", False,
         "The substantive obligations a court order imposes, consent decrees and stipulated "
         "judgments or injunctions included, since these are entered as orders of the court."),
    Item(17, "decree_dates", "Dates of All Decrees", "Decree dates", "decrees", False,
         "Every date in the life of a decree (an injunction, consent decree or stipulated judgment): "
         "entry, modification or amendment, stay or suspension, partial and full termination."),
    Item(18, "decree_duration", "How Long Decrees will Last", "Decree duration", "decrees", False,
         "How long each decree's obligations run, one value per decree. A decree is an order or "
         "judgment of the court, as opposed to an agreement negotiated between the parties."),
    Item(19, "settlement_terms", "Significant Terms of Settlement", "Settlement terms", "settlements",
         False,
         "The substantive obligations the parties accept in a settlement that is not entered as a court "
         "order; a settlement the court approves or enforces is still a settlement if it is not an order."),
    Item(20, "settlement_date", "Date of Settlement", "Settlement dates", "settlements", False,
         "Every settlement date, one value each: signing or execution, court approval (when not made an "
         "order), amendments, the court keeping jurisdiction without incorporating the agreement, and "
         "the agreement's end if it has a contractual term."),
    Item(21, "settlement_duration", "How Long Settlement will Last", "Settlement duration", "settlements",
         False,
         "How long each settlement's obligations run, one value per settlement. A settlement is an "
         "agreement negotiated between the parties, as opposed to an order of the court."),
    Item(22, "court_enforced", "Whether the Settlement is Court-enforced or Not", "Settlement court-enforced",
         "settlements", True,
         "Whether a settlement that was not entered as an order is enforced by the court: yes when the "
         "court expressly keeps jurisdiction to enforce it without making it an order (Kokkonen-style "
         "retention), no when it is a purely private agreement."),
    Item(23, "enforcement_disputes", "Disputes Over Settlement Enforcement", "Settlement disputes",
         "settlements", False,
         "Each dispute over enforcing a settlement that is not a court order (motions to enforce or for "
         "contempt, requests relying on retained jurisdiction), with its date, who moved, the issue and "
         "the outcome or that it is pending."),
    Item(24, "monitor_name", "Name of the Monitor", "Monitor name", "monitoring", True,
         "The name of any monitor or special master appointed by the court."),
    Item(25, "monitor_reports", "Monitor Reports", "Monitor reports", "monitoring", False,
         "What the monitor found about the defendants' compliance with court orders, including which "
         "obligations are being met."),
    Item(26, "factual_basis", "Factual Basis of Case", "Factual basis", "context", False,
         "The facts and evidence behind the claims: the events (what happened, when, where, to whom), "
         "the supporting evidence (physical, documentary, testimony) and the background."),
)

ITEM_KEYS: tuple[str, ...] = tuple(item.key for item in ITEMS)
GROUP_KEYS: tuple[str, ...] = tuple(group.key for group in GROUPS)

_BY_KEY = {item.key: item for item in ITEMS}
_GROUP_BY_KEY = {group.key: group for group in GROUPS}

# Spellings that differ from an item's name or underscore form only in this way are "variants":
# they are accepted, and reported by `spelling_of` so the release audit can list them.
_VARIANT_NORMALISER = re.compile(r"[\s_]+")


def _fold(text: str) -> str:
    """Case-, space- and punctuation-insensitive form used to recognise stray spellings."""
    text = _VARIANT_NORMALISER.sub(" ", text).strip(" ._-:").lower()
    return text


_EXACT: dict[str, Item] = {}
for _item in ITEMS:
    for _spelling in (_item.key, _item.name, _item.underscore, _item.slug):
        _EXACT[_spelling] = _item
_FOLDED: dict[str, Item] = {_fold(s): it for s, it in _EXACT.items()}
# Short names the Gavel-Agent README and some configs use.
_FOLDED[_fold("All Reported Opinions Cited")] = _BY_KEY["reported_opinions"]


def item(name: str) -> Item:
    """Return the item for any known spelling (key, spaced name, underscore name, agent slug,
    or a stray variant such as a trailing underscore or full stop). Raises UnknownItemError."""
    found = _EXACT.get(name)
    if found is None:
        found = _FOLDED.get(_fold(name)) if isinstance(name, str) else None
    if found is None:
        close = closest(name) if isinstance(name, str) else []
        hint = (f"; did you mean {' or '.join(repr(c) for c in close)}?" if close
                else "; `gavel items` lists them")
        raise UnknownItemError(f"unknown checklist item {name!r}: not one of the 26 GAVEL items{hint}")
    return found


def closest(name: str, n: int = 3) -> list[str]:
    """The item names (spaced spelling) closest to ``name`` -- by any of its spellings -- best first."""
    import difflib

    want = _fold(name)
    scored: dict[str, float] = {}
    for spelled, it in _FOLDED.items():
        ratio = difflib.SequenceMatcher(None, want, spelled).ratio()
        if ratio >= 0.6 or (len(want) >= 4 and want in spelled):
            scored[it.name] = max(scored.get(it.name, 0.0), ratio + (0.3 if want in spelled else 0.0))
    return sorted(scored, key=lambda k: -scored[k])[:n]


def spelling_of(name: str) -> str:
    """Classify a spelling: 'key', 'name' (spaces), 'underscore', 'slug' or 'variant'."""
    it = item(name)
    for kind, spelled in (("key", it.key), ("name", it.name), ("underscore", it.underscore), ("slug", it.slug)):
        if name == spelled:
            return kind
    return "variant"


def group(key: str) -> Group:
    try:
        return _GROUP_BY_KEY[key]
    except KeyError:
        raise UnknownItemError(f"unknown checklist group {key!r}") from None


def items_in_group(key: str) -> tuple[Item, ...]:
    group(key)
    return tuple(it for it in ITEMS if it.group == key)


def group_slug(key: str) -> str:
    """Folder name of the Gavel-Agent's grouped run, e.g. ``01_basic_case_info``."""
    g = group(key)
    return f"{g.number:02d}_{g.key}"
