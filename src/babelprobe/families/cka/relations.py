"""English Wikidata labels of the relations in Polyglot-or-Not (every P-id its 20 language files
use), so reports show "P36 capital" rather than a bare "P36"."""

from __future__ import annotations

WIKIDATA_LABELS: dict[str, str] = {
    "P17": "country",
    "P19": "place of birth",
    "P20": "place of death",
    "P30": "continent",
    "P36": "capital",
    "P37": "official language",
    "P39": "position held",
    "P47": "shares border with",
    "P101": "field of work",
    "P103": "native language",
    "P106": "occupation",
    "P108": "employer",
    "P127": "owned by",
    "P131": "located in the administrative territorial entity",
    "P136": "genre",
    "P138": "named after",
    "P159": "headquarters location",
    "P176": "manufacturer",
    "P178": "developer",
    "P264": "record label",
    "P276": "location",
    "P364": "original language of film or TV show",
    "P407": "language of work or name",
    "P413": "position played on team / speciality",
    "P449": "original broadcaster",
    "P495": "country of origin",
    "P641": "sport",
    "P740": "location of formation",
    "P937": "work location",
    "P1303": "instrument",
    "P1376": "capital of",
    "P1412": "languages spoken, written or signed",
}


def relation_label(relation: str) -> str:
    """'P36 capital'; an unknown id as it is."""
    label = WIKIDATA_LABELS.get(relation)
    return f"{relation} {label}" if label else relation
