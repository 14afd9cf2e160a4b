"""Running a run: its executor and steps, consuming outcomes, the lifecycle, claims, and
reading a run and its timeline back."""
