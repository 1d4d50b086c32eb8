"""GUI test script: raises while loading; the error must appear in the window with file:line."""


def helper():
    raise ValueError("boom from the test script")


helper()
