"""tabflow.testing.assert_frame_equal: engine-agnostic, index-blind frame comparison."""

from __future__ import annotations

import pandas as pd
import pytest

from tabflow.testing import assert_frame_equal


def test_ignores_the_index_but_not_values_or_dtypes():
    assert_frame_equal(pd.DataFrame({"a": [1, 2]}, index=[7, 9]), pd.DataFrame({"a": [1, 2]}))
    with pytest.raises(AssertionError):
        assert_frame_equal(pd.DataFrame({"a": [1, 2]}), pd.DataFrame({"a": [1, 3]}))
    with pytest.raises(AssertionError):
        assert_frame_equal(pd.DataFrame({"a": [1, 2]}), pd.DataFrame({"a": [1.0, 2.0]}))
    assert_frame_equal(pd.DataFrame({"a": [1, 2]}), pd.DataFrame({"a": [1.0, 2.0]}), check_dtype=False)


def test_string_storage_is_not_data_but_values_and_missing_value_kind_are():
    python = pd.DataFrame({"s": pd.array(["x", None], dtype="string[python]"), "n": [1, 2]})
    arrow = pd.DataFrame({"s": pd.array(["x", None], dtype="string[pyarrow]"), "n": [1, 2]})
    assert_frame_equal(arrow, python)
    assert_frame_equal(python, arrow)
    with pytest.raises(AssertionError, match="are different"):
        assert_frame_equal(arrow, python.assign(s=pd.array(["y", None], dtype="string[python]")))
    # "str" is pandas' default: object on pandas 2, NaN-based strings on pandas 3; neither is "string".
    for other in (pd.Series(["x", None], dtype="str"), pd.Series(["x", None], dtype=object)):
        with pytest.raises(AssertionError, match="dtype"):
            assert_frame_equal(arrow, python.assign(s=other))
    # Columns are matched by position, so a repeated label is compared column by column.
    repeated = pd.concat([arrow[["s"]], arrow[["s"]]], axis=1)
    assert_frame_equal(repeated, pd.concat([python[["s"]], python[["s"]]], axis=1))
    with pytest.raises(AssertionError):
        assert_frame_equal(repeated, pd.concat([python[["s"]], python[["s"]].astype(object)], axis=1))
