"""The Widget API (demo.example.com), declared once; `olmtool crd generate` writes its CRD.

A new API version: a module beside v1alpha1.py and a Version(...) below; exactly one
version is the storage version.
"""

from olmtool.crd import CustomResource, PrinterColumn, Version

from foo_operator.api import v1alpha1

GROUP = "demo.example.com"

widget = CustomResource(
    group=GROUP,
    kind="Widget",
    description="Widget is the Schema for the widgets API.",
    versions=(
        Version(
            name="v1alpha1",
            spec=v1alpha1.WidgetSpec,
            status=v1alpha1.WidgetStatus,
            storage=True,
            printer_columns=(
                PrinterColumn(name="Size", json_path=".spec.size", type="integer"),
                PrinterColumn(
                    name="Age", json_path=".metadata.creationTimestamp", type="date"
                ),
            ),
        ),
    ),
)
