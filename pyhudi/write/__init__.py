"""pyhudi.write: the write path (prepare → bucketize → sort → split by family → write → commit)."""
