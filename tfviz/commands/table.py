"""The table of ``tfviz``'s commands: one :class:`Command` each, in ``tfviz --help``'s order.

>>> [(c.name, c.headless) for c in COMMANDS]
[('check', True), ('jacobian', True), ('export', True), ('serve', True), ('open', False)]
>>> sorted(HEADLESS)
['check', 'export', 'jacobian', 'serve']
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from tfviz.commands import check, export, open_app, serve
from tfviz.commands import jacobian as jacobian_cli

if TYPE_CHECKING:
    from tfviz.commands.args import Subparsers
    from tfviz.exitstatus import ExitStatus


class CommandModule(Protocol):
    """What a command's module provides."""

    def add_parser(self, sub: Subparsers) -> None:
        """Add the command's parser (named as its :class:`Command`) to ``sub``."""

    def run(self, args: argparse.Namespace) -> ExitStatus:
        """Do what ``args`` (parsed by that parser) asks."""


@dataclass(frozen=True)
class Command:
    name: str
    module: CommandModule
    #: Runs without Qt, in the library (:func:`tfviz.cli.main`); the others are the app's.
    headless: bool
    #: Runs the user's program, which is handed what follows ``--`` as its own arguments.
    takes_program_args: bool = True


COMMANDS: tuple[Command, ...] = (
    Command("check", check, headless=True),
    Command("jacobian", jacobian_cli, headless=True),
    Command("export", export, headless=True),
    Command("serve", serve, headless=True, takes_program_args=False),
    Command("open", open_app, headless=False),
)
BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}
#: The commands the library runs; the console script opens the window for the rest.
HEADLESS: frozenset[str] = frozenset(c.name for c in COMMANDS if c.headless)


def add_parsers(sub: Subparsers) -> None:
    """Every command's parser, in the table's order."""
    for command in COMMANDS:
        command.module.add_parser(sub)
