"""bertology."""
