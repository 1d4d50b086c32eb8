"""GUI test script: crashes the interpreter (segmentation fault) while loading."""
import ctypes

ctypes.string_at(0)
