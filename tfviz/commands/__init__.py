"""``tfviz``'s commands, one module each, and the table that lists them.

- :mod:`tfviz.commands.table`: the table (:data:`~tfviz.commands.table.COMMANDS`): each
  command's name, its module, and whether it runs headless (without Qt). ``tfviz``'s parser
  is built from it (:mod:`tfviz.cli`), and the console script (``app.launch``) asks it which
  commands the library runs and which open the window;
- :mod:`tfviz.commands.check`, :mod:`tfviz.commands.export`, :mod:`tfviz.commands.jacobian`,
  :mod:`tfviz.commands.open_app`: the commands. Each has ``add_parser(subparsers)`` and
  ``run(args) -> ExitStatus`` (:class:`tfviz.exitstatus.ExitStatus`);
- :mod:`tfviz.commands.args`: the argparse pieces they share.

This package's ``__init__`` imports nothing, so a command module can import
:mod:`tfviz.commands.args` without importing the table, and the table every command.
"""
