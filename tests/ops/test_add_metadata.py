"""AddMetadata and its variants: schema changes only."""

from __future__ import annotations

import pandas as pd
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops
from tabflow.schema import Tags


@pytest.fixture
def frame():
    return pd.DataFrame({"user": [1, 2, None], "item": [3, 4, 5], "label": [0, 1, 0]})


def _tags(wf, name):
    return {str(t) for t in wf.output_schema[name].tags}


def test_data_passes_through_unchanged(frame, to_engine):
    wf = nvt.Workflow((["label"] >> ops.AddTags(Tags.TARGET)) + ["user", "item"])
    out = to_host(wf.fit_transform(nvt.Dataset(to_engine(frame), npartitions=2)).compute())
    pd.testing.assert_frame_equal(out, frame[["label", "user", "item"]])
    assert _tags(wf, "label") == {"target"}
    assert _tags(wf, "user") == set()


@pytest.mark.parametrize(
    ("op", "tags"),
    [
        (ops.AddTags([Tags.TARGET, Tags.BINARY_CLASSIFICATION]), {"target", "binary_classification"}),
        (ops.AddTags("target"), {"target"}),
        (ops.AddTags(["my_tag"]), {"my_tag"}),
        (ops.TagAsUserID(), {"user", "id"}),
        (ops.TagAsItemID(), {"item", "id"}),
        (ops.TagAsUserFeatures(), {"user"}),
        (ops.TagAsItemFeatures(), {"item"}),
        (ops.AddMetadata(tags=[Tags.CATEGORICAL], properties={"domain": 9}), {"categorical"}),
    ],
)
def test_tags(frame, op, tags):
    wf = nvt.Workflow(["user"] >> op).fit(dataset_with_empty_partitions(frame))
    assert _tags(wf, "user") == tags
    assert wf.output_schema["user"].dtype == "float64"


def test_properties_merge_and_tags_accumulate(frame):
    node = ["item"] >> ops.AddProperties({"a": 1}) >> ops.AddMetadata(tags=Tags.ITEM, properties={"b": 2})
    wf = nvt.Workflow(node >> ops.TagAsItemID()).fit(frame)
    column = wf.output_schema["item"]
    assert column.properties == {"a": 1, "b": 2}
    assert _tags(wf, "item") == {"item", "id"}
    assert wf.output_schema.select_by_tag(Tags.ITEM_ID).column_names == ["item"]


def test_save_load_keeps_schema(frame, tmp_path):
    wf = nvt.Workflow((["label"] >> ops.AddTags([Tags.TARGET])) + (["user"] >> ops.TagAsUserID())).fit(frame)
    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema == wf.output_schema
    pd.testing.assert_frame_equal(loaded.transform(frame), wf.transform(frame))


@pytest.mark.parametrize("op_class", [ops.TagAsUserID, ops.TagAsItemID, ops.TagAsUserFeatures, ops.TagAsItemFeatures])
def test_tag_as_ops_accept_nvtabulars_ignored_tags_argument(frame, op_class):
    # NVTabular 23.08: TagAsUserID(tags=None) etc.; the argument never changed the tags.
    plain = nvt.Workflow(["user"] >> op_class()).fit(frame)
    assert op_class(tags=None).get_params() == {"tags": None}
    with pytest.warns(UserWarning, match="tags=.*no effect"):
        op = op_class([Tags.TARGET])
    assert op.get_params() == {"tags": [Tags.TARGET]}
    assert nvt.Workflow(["user"] >> op).fit(frame).output_schema == plain.output_schema
