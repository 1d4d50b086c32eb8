"""The user's script: its targets and mode read without running it, loading it as a
module, finding its variables, mapping stacks to the user's own lines."""
