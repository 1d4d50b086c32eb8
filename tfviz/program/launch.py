"""Running the user's script as ``python SCRIPT ARGS`` would, under the step handler,
and saying why it ended when it never reached the chosen gradient step."""

from __future__ import annotations

import os
import sys
import types

from tfviz.errors import AnalysisError
from tfviz.program import hooks
from tfviz.program.capture import Reached, Refused, StepCapture
from tfviz.program.run import RunHandler
from tfviz.script.loader import Capture, compile_script, error_from_exception, read_source
from tfviz.script.scriptinfo import static_targets


def run_program(path: str, args: list[str], step: int, capture: Capture) -> StepCapture:
    """Run the script at ``path`` as ``__main__`` until its ``step``-th gradient
    computation; raise AnalysisError when it never gets there."""
    path = os.path.abspath(path)
    code = compile_script(path)
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__dict__["__builtins__"] = __builtins__
    folder = os.path.dirname(os.path.realpath(path))  # as `python script.py` sets sys.path[0]
    if folder not in sys.path:
        sys.path.insert(0, folder)
    saved_main, saved_argv = sys.modules.get("__main__"), sys.argv
    sys.modules["__main__"] = module
    sys.argv = [path, *args]
    handler = RunHandler(step, path)
    hooks.install()
    try:
        with capture.active(), hooks.handling(handler):
            exec(code, module.__dict__)  # noqa: S102 - running the user's program is the point
    except Reached as reached:
        return reached.capture
    except Refused as refused:
        raise refused.error from None
    except SystemExit as exc:
        if handler.pending is not None:
            return handler.pending
        raise _exit_error(exc, path, capture, handler.count) from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the user's program may raise anything
        if handler.pending is not None:
            return handler.pending  # it failed after its captured step: nothing lost
        what = ("the program raised before its first gradient computation" if handler.count == 0
                else f"the program raised after {handler.count} gradient computation(s)")
        raise error_from_exception(exc, what, path) from None
    finally:
        sys.argv = saved_argv
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    if handler.pending is not None:
        return handler.pending
    done = "ran to the end without computing a gradient" if handler.count == 0 else (
        f"ran to the end after {handler.count} gradient computation(s); --step {step} asks for more")
    candidates = tuple(static_targets(read_source(path)))
    if candidates:
        done += (f". Functions it could differentiate instead: {', '.join(candidates)}"
                 " (choose one with --target NAME)")
    raise AnalysisError(f"the program {done}", file=path, detail=_tail(capture), candidates=candidates)


def _exit_error(exc: SystemExit, path: str, capture: Capture, count: int) -> AnalysisError:
    code = exc.code
    status = code if isinstance(code, int) or code is None else 1
    when = "before its first gradient computation" if count == 0 else f"after {count} gradient computation(s)"
    msg = f"the program exited (status {status or 0}) {when}"
    if isinstance(code, str):
        msg += f": {code}"
    hint = ""
    err = capture.err.getvalue()
    if status == 2 and "usage:" in err:
        hint = "; it rejected its command line: pass its arguments after --, as in tfviz check SCRIPT -- ARGS"
    return AnalysisError(msg + hint, file=path, detail=_tail(capture))


def _tail(capture: Capture, lines: int = 15) -> str:
    parts = []
    for name, buf in (("stdout", capture.out), ("stderr", capture.err)):
        text = buf.getvalue().rstrip().splitlines()[-lines:]
        if text:
            parts.append(f"last lines of {name}:\n" + "\n".join("  " + t for t in text))
    return "\n".join(parts)
