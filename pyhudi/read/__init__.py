"""pyhudi.read: family readers, the row reader and queries."""
