"""PHEE file formats: JSON lines (:mod:`.phee_json`) and brat standoff (:mod:`.brat`), both ways."""
