"""The window's docks: Details, Log, Variables, Problems, Search, Source, gradient-flow chart."""
