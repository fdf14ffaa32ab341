"""A new project's files, rendered from :class:`ProjectNames` (pure: no disk access)."""

from __future__ import annotations

import json
import re

from olmtool import yamlread
from olmtool.scaffold import templates
from olmtool.scaffold.names import ProjectNames

PROJECT_FILE = "olmtool.yaml"
ICON_FILE = "config/manifests/icon.svg"
# Plain YAML scalars for what is safe unquoted; anything else is written JSON-quoted.
_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$")


def render_project(names: ProjectNames) -> dict[str, str]:
    """Relative path -> text of every file of the project, in a fixed order."""
    values = _values(names)
    api = f"{names.module}/api"
    return {
        PROJECT_FILE: templates.PROJECT_FILE.substitute(values),
        f"{names.module}/__init__.py": templates.PACKAGE_INIT.substitute(values),
        f"{api}/__init__.py": templates.API_INIT.substitute(values),
        f"{api}/{names.api_version}.py": templates.API_VERSION_MODULE.substitute(values),
        f"config/manifests/bases/{names.csv_file}": templates.BASE_CSV.substitute(values),
        ICON_FILE: templates.ICON.substitute(values),
        sample_file(names): templates.SAMPLE.substitute(values),
    }


def sample_file(names: ProjectNames) -> str:
    """kubebuilder's name for a sample: ``config/samples/demo_v1alpha1_widget.yaml``."""
    return f"config/samples/{names.group_prefix}_{names.api_version}_{names.kind_lower}.yaml"


def bundle_dir(names: ProjectNames) -> str:
    return f"bundle/{names.package}/{names.version}"


def next_steps(names: ProjectNames, directory: str) -> list[str]:
    """The commands that take the new project to a validated bundle and a catalog."""
    steps = [] if directory == "." else [f"cd {directory}"]
    return [
        *steps,
        "olmtool crd generate",
        "olmtool bundle build",
        f"olmtool bundle validate {bundle_dir(names)} --strict --select all",
        "olmtool catalog publish",
    ]


def _values(names: ProjectNames) -> dict[str, str]:
    bundle_image = names.image.rsplit("@", 1)[0]
    repository = _repository(bundle_image)
    return {
        "package": names.package,
        "module": names.module,
        "group": names.group,
        "kind": names.kind,
        "kind_lower": names.kind_lower,
        "plural": names.plural,
        "api_version": names.api_version,
        "version": _scalar(names.version),
        "channel": _scalar(names.channel),
        "display_name": names.display_name,
        "domain": names.domain,
        "csv_file": names.csv_file,
        "install_modes": ", ".join(names.install_modes),
        "image": _scalar(names.image),
        "bundle_image": json.dumps(f"{repository}-bundle:{{version}}"),
        "resource_variable": names.resource_variable,
        "initial": names.kind[0],
    }


def _repository(image: str) -> str:
    """The image's name without tag (a port's colon is not a tag's)."""
    name, _, tag = image.rpartition(":")
    return name if name and "/" not in tag else image


def _scalar(text: str) -> str:
    """``text`` as a YAML scalar that reads back as this string."""
    if _PLAIN.match(text) and yamlread.reads_as_string(text):
        return text
    return json.dumps(text)
