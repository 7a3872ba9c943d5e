"""AddMetadata and its variants: add tags and properties to columns; the data is unchanged."""

from __future__ import annotations

from typing import Any

from tabflow.ops.operator import Operator
from tabflow.schema import Tags

__all__ = [
    "AddMetadata",
    "AddTags",
    "AddProperties",
    "TagAsUserID",
    "TagAsItemID",
    "TagAsUserFeatures",
    "TagAsItemFeatures",
]


class AddMetadata(Operator):
    """Add tags and/or properties to the selected columns' schema; values pass through.

    Parameters
    ----------
    tags : Tags, str or list of them, optional
    properties : dict, optional
        JSON-serialisable; merged into each column's existing properties.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> from tabflow.schema import Tags
    >>> wf = nvt.Workflow(["label"] >> ops.AddTags([Tags.TARGET, Tags.BINARY_CLASSIFICATION]))
    >>> out = wf.fit_transform(pd.DataFrame({"label": [0, 1]}))
    >>> out["label"].tolist(), sorted(str(t) for t in wf.output_schema["label"].tags)
    ([0, 1], ['binary_classification', 'target'])
    """

    row_wise = True

    def __init__(self, tags: Any = None, properties: dict[str, Any] | None = None) -> None:
        self.tags = tags
        self.properties = properties

    @property
    def output_tags(self) -> list[Any]:
        if not self.tags:
            return []
        return [self.tags] if isinstance(self.tags, (str, Tags)) else list(self.tags)

    @property
    def output_properties(self) -> dict[str, Any]:
        return dict(self.properties or {})


class AddTags(AddMetadata):
    """Add tags, e.g. ``["label"] >> ops.AddTags(Tags.TARGET)``.

    Examples
    --------
    >>> from tabflow import ops
    >>> ops.AddTags("target").output_tags
    ['target']
    """

    def __init__(self, tags: Any = None) -> None:
        super().__init__(tags=tags)


class AddProperties(AddMetadata):
    """Add properties, e.g. ``["price"] >> ops.AddProperties({"unit": "EUR"})``.

    Examples
    --------
    >>> from tabflow import ops
    >>> ops.AddProperties({"unit": "EUR"}).output_properties
    {'unit': 'EUR'}
    """

    def __init__(self, properties: dict[str, Any] | None = None) -> None:
        super().__init__(properties=properties)


class _FixedTags(AddMetadata):
    """An AddMetadata whose tags are fixed by the class (``FIXED_TAGS``).

    NVTabular 23.08's constructors take a ``tags`` argument and ignore it; it is accepted
    and stored here too, and has no effect.
    """

    FIXED_TAGS: tuple = ()

    def __init__(self, tags: Any = None) -> None:
        self.tags = tags
        self.properties = None

    @property
    def output_tags(self) -> list[Any]:
        return list(self.FIXED_TAGS)


class TagAsUserID(_FixedTags):
    """Mark the user id column: tags ``id`` and ``user`` (together, ``Tags.USER_ID``).

    Examples
    --------
    >>> from tabflow import ops
    >>> from tabflow.schema import Tags
    >>> sorted(str(t) for t in ops.TagAsUserID().output_tags)
    ['id', 'user']
    """

    FIXED_TAGS = (Tags.ID, Tags.USER)


class TagAsItemID(_FixedTags):
    """Mark the item id column: tags ``id`` and ``item`` (together, ``Tags.ITEM_ID``).

    Examples
    --------
    >>> from tabflow import ops
    >>> sorted(str(t) for t in ops.TagAsItemID().output_tags)
    ['id', 'item']
    """

    FIXED_TAGS = (Tags.ID, Tags.ITEM)


class TagAsUserFeatures(_FixedTags):
    """Mark columns that describe the user: tag ``user``.

    Examples
    --------
    >>> from tabflow import ops
    >>> [str(t) for t in ops.TagAsUserFeatures().output_tags]
    ['user']
    """

    FIXED_TAGS = (Tags.USER,)


class TagAsItemFeatures(_FixedTags):
    """Mark columns that describe the item: tag ``item``.

    Examples
    --------
    >>> from tabflow import ops
    >>> [str(t) for t in ops.TagAsItemFeatures().output_tags]
    ['item']
    """

    FIXED_TAGS = (Tags.ITEM,)
