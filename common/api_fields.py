"""Serializer fields shared by the APIs."""

from __future__ import annotations

from rest_framework import serializers

# Primary keys are 64-bit signed; a larger number would overflow the database driver (a 500), not miss.
MAX_ID = 2**63 - 1


def id_field(**kwargs) -> serializers.IntegerField:
    """A database id: a positive integer the database can hold."""
    return serializers.IntegerField(min_value=1, max_value=MAX_ID, **kwargs)


def id_list_field(*, max_length: int = 10000, **kwargs) -> serializers.ListField:
    return serializers.ListField(child=id_field(), max_length=max_length, **kwargs)
