"""Table services: compaction, clustering, cleaning, archival and rollback (DESIGN §4)."""
