"""Comments of a hand-edited base CSV stay with the entries they describe after the merge
(issue 16, item 7): the merge appends keys to maps and reorders keyed lists, and ruamel
keeps a full-line comment with whatever precedes it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from olmtool import yamlwrite
from olmtool.bundle import build_bundle, merge_into_base
from olmtool.config import load_project

HERE = Path(__file__).parent
BASE = HERE / "fixtures" / "comments" / "base.clusterserviceversion.yaml"
GOLDEN = HERE / "golden" / "comments" / "merged.clusterserviceversion.yaml"
CSV = "manifests/widget-operator.clusterserviceversion.yaml"


def test_merged_csv_keeps_comments_on_their_entries(project: Path) -> None:
    shutil.copy(BASE, project / "base" / "widget-operator.clusterserviceversion.yaml")
    settings = load_project(project / "olmtool.yaml").settings.bundle
    text = build_bundle(settings, project).files[CSV]
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


def _merged(base: str, generated: dict) -> list[str]:
    document = merge_into_base(yamlwrite.loads(base), yamlwrite.to_plain(generated))
    return yamlwrite.dump_document(document).splitlines()


def _above(lines: list[str], comment: str) -> str:
    return lines[lines.index(comment) + 1].strip()


def test_comment_on_a_list_item_moves_with_it_when_generated_items_come_first() -> None:
    base = (
        "spec:\n"
        "  relatedImages:\n"
        "    # the sidecar\n"
        "    - {name: sidecar, image: s:1}\n"
        "    # the agent\n"
        "    - {name: agent, image: a:1}\n"
    )
    generated = {
        "spec": {
            "relatedImages": [{"name": "agent", "image": "a:2"}, {"name": "op", "image": "o:1"}]
        }
    }
    assert _merged(base, generated) == [
        "spec:",
        "  relatedImages:",
        "    # the agent",
        "    - {name: agent, image: a:2}",
        "    - image: o:1",
        "      name: op",
        "    # the sidecar",
        "    - {name: sidecar, image: s:1}",
    ]


def test_comment_before_a_key_stays_there_when_keys_are_appended_to_the_map_above() -> None:
    base = (
        "spec:\n"
        "  install:\n"
        "    deployments:\n"
        "      - name: op\n"
        "        label: x\n"
        "  # about the custom field\n"
        "  customField: kept\n"
        "# end of the document\n"
    )
    generated = {
        "spec": {
            "install": {"deployments": [{"name": "op", "spec": {"replicas": 1}}]},
            "version": "1.0.0",
        }
    }
    lines = _merged(base, generated)
    assert _above(lines, "  # about the custom field") == "customField: kept"
    assert lines[-1] == "# end of the document"
    assert lines.index("          replicas: 1") < lines.index("  # about the custom field")


def test_end_of_line_comments_stay_on_their_line() -> None:
    base = "spec:\n  displayName: Old  # replaced\n  support: me  # who answers\n"
    lines = _merged(base, {"spec": {"displayName": "New"}})
    assert lines == ["spec:", "  displayName: New  # replaced", "  support: me  # who answers"]
