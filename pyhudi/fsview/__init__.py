"""File-system view: file groups and file slices from the timeline and a listing."""
