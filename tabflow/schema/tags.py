"""Column tags, importable as ``tabflow.schema.tags`` as merlin's ``merlin.schema.tags`` is.

Examples
--------
>>> from tabflow.schema.tags import Tags
>>> from tabflow.schema import Tags as SameTags
>>> Tags is SameTags, Tags.CATEGORICAL.value
(True, 'categorical')
"""

from __future__ import annotations

from enum import Enum

__all__ = ["Tags"]


class Tags(str, Enum):
    """Standard column tags (the names NVTabular / Merlin users know).

    Examples
    --------
    >>> from tabflow.schema import Tags
    >>> Tags.CATEGORICAL.value
    'categorical'
    """

    CATEGORICAL = "categorical"
    CONTINUOUS = "continuous"
    LIST = "list"
    SEQUENCE = "sequence"
    TEXT = "text"
    TIME = "time"
    ID = "id"
    USER = "user"
    ITEM = "item"
    USER_ID = "user_id"
    ITEM_ID = "item_id"
    SESSION_ID = "session_id"
    CONTEXT = "context"
    EMBEDDING = "embedding"
    HASHED = "hashed"
    TARGET = "target"
    BINARY_CLASSIFICATION = "binary_classification"
    MULTI_CLASS_CLASSIFICATION = "multi_class"
    REGRESSION = "regression"

    def __str__(self) -> str:
        return self.value
