"""Program mode: run the user's training program unchanged, count its gradient
computations, stop at the chosen step and replay it as a target."""
