from typing import Any

from tfviz.api import Report as Report
from tfviz.api import check as check
from tfviz.errors import AnalysisError as AnalysisError

__version__: str

def load_ipython_extension(ipython: Any) -> None: ...

__all__: list[str]
