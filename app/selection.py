"""Keeping the panels in step: a report shown everywhere at once, and a selection in one
panel (graph node, variable, problem) reflected in the others.

:class:`SelectionSync` is handed the panels it links and the analysis whose report they
show; the panels themselves know nothing of one another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tfviz.report import Report
from tfviz.structure.gradient_path import gradient_path

from .panels.path_details import path_html

if TYPE_CHECKING:
    from .analysis import AnalysisController
    from .graph.panel import GraphPanel
    from .panels.docks import DetailsPanel
    from .panels.flow_chart import FlowChart
    from .panels.problems import ProblemsPanel
    from .panels.source_view import SourceView
    from .panels.training import TrainingPanel
    from .panels.variables import VariablesPanel


class SelectionSync:
    """Show a report in every panel; follow a selection from one panel to the others."""

    def __init__(
        self,
        analysis: AnalysisController,
        graph: GraphPanel,
        variables: VariablesPanel,
        problems: ProblemsPanel,
        flow: FlowChart,
        details: DetailsPanel,
        source: SourceView,
        training: TrainingPanel,
    ) -> None:
        self.analysis = analysis
        self.graph, self.variables, self.problems, self.flow = graph, variables, problems, flow
        self.details, self.source, self.training = details, source, training
        self.current_path_ops: set[str] = set()
        graph.view.nodeSelected.connect(self.node_selected)
        graph.view.pathRequested.connect(self.show_path)
        variables.variableSelected.connect(self.variable_selected)
        problems.problemActivated.connect(self.show_problem)
        flow.variableClicked.connect(variables.select_name)

    @property
    def report(self) -> Report | None:
        return self.analysis.report

    def show_report(self, report: Report | None) -> None:
        self.variables.set_report(report)
        self.graph.view.set_report(report)
        self.problems.set_report(report, self.graph.view.hierarchy)
        self.flow.set_report(report)
        self.details.show_op(report, "")
        self.source.set_report(report)
        self.training.show_report(report)  # keeps its record: a step diagnosed from it is shown
        self.source_on_first_problem(report)

    def source_on_first_problem(self, report: Report | None) -> None:
        """Open the Source panel where the first problem is, not at the top of the file."""
        first = next((p.source for p in report.problems if p.source), None) if report else None
        if first is not None:
            self.source.mark_line(first.line, first.file, first.code)

    def node_selected(self, node_id: str) -> None:
        v = self.graph.view
        label = v.hierarchy.groups[node_id].label if v.hierarchy and node_id in v.hierarchy.groups else ""
        self.details.show_op(self.report, node_id, label, v.hierarchy)
        op = v.hierarchy.ops.get(node_id) if v.hierarchy else None
        if op is not None and op.source:
            self.source.mark_line(op.source.line, op.source.file, op.source.code)

    def show_problem(self, p) -> None:
        if p.op:
            self.graph.view.select_op(p.op, background=True)
        elif p.variables:  # found at no op: the variable it is about shows its path
            self.variables.select_name(p.variables[0])
        if p.source:
            self.source.mark_line(p.source.line, p.source.file, p.source.code)

    def variable_selected(self, var) -> None:
        view = self.graph.view
        if var is None or self.report is None:
            view.show_path(None)
            return
        self.show_path(f"var:{var.name}")
        op = view.hierarchy.ops.get(var.blocked_at[0]) if view.hierarchy and var.blocked_at else None
        if op is not None and op.source:  # where its gradient stops
            self.source.mark_line(op.source.line, op.source.file, op.source.code)

    def show_path(self, node_id: str) -> None:
        """Isolate ``node_id``'s gradient path in the graph; Details lists it hop by hop."""
        view = self.graph.view
        if self.report is None or view.hierarchy is None:
            return
        group = view.hierarchy.groups.get(node_id)
        members = view.hierarchy.members(node_id) if group is not None else None
        path = gradient_path(self.report, node_id, members)
        view.show_path(path)
        title = group.label if group is not None else ""
        self.details.setHtml(path_html(self.report, path, set(view.hierarchy.alias), title, view.hierarchy))
        self.current_path_ops = path.ops
