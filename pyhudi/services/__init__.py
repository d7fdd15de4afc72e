"""Table services: compaction (here now); cleaning, archival and clustering next (DESIGN §4)."""
