"""Column tags and tag sets, importable as ``tabflow.schema.tags`` as merlin's ``merlin.schema.tags`` is.

A column's tags are a :class:`TagSet`: strings that name a standard tag become :class:`Tags`
members whatever their case, compound tags are split into their parts (``USER_ID`` is
``USER`` and ``ID``), and tags that contradict each other (a column cannot be both
``CATEGORICAL`` and ``CONTINUOUS``) are refused, or replaced when a tag is added with
:meth:`TagSet.override`, the rule merlin 23.08 applies (``TAG_COLLISIONS``).

Examples
--------
>>> from tabflow.schema.tags import Tags, TagSet
>>> from tabflow.schema import Tags as SameTags
>>> Tags is SameTags, Tags.CATEGORICAL.value
(True, 'categorical')
>>> sorted(TagSet(["CATEGORICAL", Tags.USER_ID]))
[<Tags.CATEGORICAL: 'categorical'>, <Tags.ID: 'id'>, <Tags.USER: 'user'>]
>>> sorted(TagSet([Tags.CONTINUOUS]).override(Tags.CATEGORICAL))
[<Tags.CATEGORICAL: 'categorical'>]
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Iterable, Union

__all__ = ["Tags", "TagSet", "TagsType", "TAG_COLLISIONS", "COMPOUND_TAGS", "to_tag"]


class Tags(str, Enum):
    """Standard column tags (merlin 23.08's members and values, plus tabflow's ``HASHED``).

    A ``str`` enum, so ``Tags.CATEGORICAL == "categorical"`` (merlin's plain enum says False).

    Examples
    --------
    >>> from tabflow.schema import Tags
    >>> Tags.CATEGORICAL.value, Tags.MULTI_CLASS_CLASSIFICATION.value
    ('categorical', 'multi_class_classification')
    """

    # Feature types
    CATEGORICAL = "categorical"
    CONTINUOUS = "continuous"
    LIST = "list"
    SEQUENCE = "sequence"
    TEXT = "text"
    TOKENIZED = "tokenized"
    TIME = "time"
    EMBEDDING = "embedding"
    # Set by HashBucket (tabflow only).
    HASHED = "hashed"

    # Feature context
    ID = "id"
    USER = "user"
    ITEM = "item"
    SESSION = "session"
    CONTEXT = "context"

    # Targets
    TARGET = "target"
    REGRESSION = "regression"
    CLASSIFICATION = "classification"
    BINARY = "binary"
    MULTI_CLASS = "multi_class"

    # Compound tags (merlin calls them deprecated; a TagSet splits the first four)
    USER_ID = "user_id"
    ITEM_ID = "item_id"
    SESSION_ID = "session_id"
    TEXT_TOKENIZED = "text_tokenized"
    BINARY_CLASSIFICATION = "binary_classification"
    MULTI_CLASS_CLASSIFICATION = "multi_class_classification"

    def __str__(self) -> str:
        return self.value


#: Tags a tag displaces when it is added (merlin 23.08's table).
TAG_COLLISIONS: dict[Tags, tuple[Tags, ...]] = {
    Tags.CATEGORICAL: (Tags.CONTINUOUS, Tags.EMBEDDING),
    Tags.CONTINUOUS: (Tags.CATEGORICAL, Tags.EMBEDDING, Tags.ID),
    Tags.EMBEDDING: (Tags.CONTINUOUS, Tags.CATEGORICAL, Tags.ID),
    Tags.ID: (Tags.CONTINUOUS, Tags.EMBEDDING),
}

#: Compound tags and the tags a TagSet stores instead.
COMPOUND_TAGS: dict[Tags, tuple[Tags, ...]] = {
    Tags.USER_ID: (Tags.USER, Tags.ID),
    Tags.ITEM_ID: (Tags.ITEM, Tags.ID),
    Tags.SESSION_ID: (Tags.SESSION, Tags.ID),
    Tags.TEXT_TOKENIZED: (Tags.TEXT, Tags.TOKENIZED),
}


def to_tag(tag: Any) -> Any:
    """A standard tag as its :class:`Tags` member (strings in any case); other tags unchanged.

    Examples
    --------
    >>> from tabflow.schema.tags import to_tag
    >>> to_tag("Continuous"), to_tag("my_tag")
    (<Tags.CONTINUOUS: 'continuous'>, 'my_tag')
    """
    if isinstance(tag, Tags):
        return tag
    if isinstance(tag, str):
        member = Tags._value2member_map_.get(tag.lower())
        return member if member is not None else tag
    return tag


def _as_list(tags: Any) -> list[Any]:
    # A single tag (a Tags member is a str too) is one tag, not its characters.
    if tags is None:
        return []
    if isinstance(tags, (str, Tags)) or not isinstance(tags, Iterable):
        return [tags]
    return list(tags)


def _atomize(tags: Iterable[Any]) -> set[Any]:
    atoms: set[Any] = set()
    for tag in map(to_tag, tags):
        atoms.update(COMPOUND_TAGS.get(tag, (tag,)) if isinstance(tag, Tags) else (tag,))
    return atoms


def _collisions(present: Iterable[Any], added: Iterable[Any]) -> set[Any]:
    """The tags of ``present`` that a tag of ``added`` displaces."""
    present = set(present)
    return {old for tag in added for old in TAG_COLLISIONS.get(tag, ()) if old in present}


class TagSet(frozenset):
    """An immutable set of normalised tags that refuses contradictory ones.

    It is a ``frozenset`` (``tags == {Tags.CATEGORICAL}`` and ``|``/``&`` work as on sets),
    with merlin's ``override``, ``+`` and ``-`` (which also take a single tag).

    ``TagSet(tags)`` takes a tag, a list of tags or a TagSet (none: the empty set):
    :class:`Tags` members or strings; a string naming a standard tag in any case becomes the
    member, compound tags are split into their parts.

    Raises
    ------
    ValueError
        If two of the tags contradict each other (``TAG_COLLISIONS``).

    Examples
    --------
    >>> from tabflow.schema import Tags, TagSet
    >>> tags = TagSet(["categorical", Tags.ITEM_ID])
    >>> tags == {Tags.CATEGORICAL, Tags.ITEM, Tags.ID}, "CATEGORICAL" in tags
    (True, True)
    >>> sorted(map(str, tags.override(Tags.CONTINUOUS)))  # CONTINUOUS displaces CATEGORICAL and ID
    ['continuous', 'item']
    >>> TagSet([Tags.CATEGORICAL, Tags.CONTINUOUS])
    Traceback (most recent call last):
    ...
    ValueError: Could not create a TagSet with the tags ['categorical', 'continuous']: ...
    """

    def __new__(cls, tags: Any = None) -> "TagSet":
        if isinstance(tags, TagSet):
            # Already checked (or deliberately left as loaded, see _unchecked).
            return tags if type(tags) is cls else frozenset.__new__(cls, tags)
        atoms = _atomize(_as_list(tags))
        clashes = _collisions(atoms, atoms)
        if clashes:
            names = sorted(map(str, atoms))
            raise ValueError(
                f"Could not create a TagSet with the tags {names}: these tags are incompatible "
                f"(a column cannot have both): {sorted(map(str, clashes))}"
            )
        return frozenset.__new__(cls, atoms)

    @classmethod
    def _unchecked(cls, tags: Any) -> "TagSet":
        """Normalised but not checked for contradictions: for tags read back from a file
        written before tabflow resolved them, which must load as they were written."""
        return frozenset.__new__(cls, _atomize(_as_list(tags)))

    def __reduce__(self) -> Any:
        return (TagSet._unchecked, (list(self),))

    def override(self, tags: Any) -> "TagSet":
        """These tags plus ``tags``, without the ones ``tags`` contradict.

        Examples
        --------
        >>> from tabflow.schema import Tags, TagSet
        >>> sorted(map(str, TagSet([Tags.CATEGORICAL, Tags.USER]).override([Tags.CONTINUOUS])))
        ['continuous', 'user']
        """
        new = TagSet(tags)
        kept = frozenset(self) - _collisions(self, new)
        return TagSet._unchecked(kept | new)

    def __contains__(self, tag: object) -> bool:
        return frozenset.__contains__(self, to_tag(tag))

    def __add__(self, tags: Any) -> "TagSet":
        return TagSet(frozenset(self) | TagSet(tags))

    def __sub__(self, tags: Any) -> "TagSet":
        return TagSet._unchecked(frozenset(self) - _atomize(_as_list(tags)))

    def __repr__(self) -> str:
        return f"TagSet({sorted(map(str, self))})"


#: What merlin accepts wherever tags are given.
TagsType = Union[TagSet, list, set, tuple, Tags, str]
