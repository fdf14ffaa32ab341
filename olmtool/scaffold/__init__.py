"""New projects: the files ``olmtool init`` writes, from a package, a group and a kind.

    from olmtool.scaffold import project_names, render_project

    names = project_names(package="foo-operator", group="demo.example.com", kind="Widget")
    files = render_project(names)   # {"olmtool.yaml": ..., "foo_operator/api/__init__.py": ...}

:func:`project_names` checks every name (raising ``ArgumentError``); :func:`render_project`
is pure, so the same names always give the same bytes. Writing is the action's job
(:mod:`olmtool.actions.project_init`).
"""

from olmtool._lazy import lazy_package

__all__ = lazy_package(
    __name__,
    {
        "olmtool.scaffold.defaults": (
            "DEFAULT_API_VERSION",
            "DEFAULT_CHANNEL",
            "DEFAULT_IMAGE",
            "DEFAULT_INSTALL_MODES",
            "DEFAULT_VERSION",
        ),
        "olmtool.scaffold.names": (
            "ProjectNames",
            "check_group",
            "check_kind",
            "check_package",
            "project_names",
        ),
        "olmtool.scaffold.render": (
            "PROJECT_FILE",
            "bundle_dir",
            "next_steps",
            "render_project",
            "sample_file",
        ),
    },
)
