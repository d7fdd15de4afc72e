"""Tour, part 1: the Python API (run: python examples/tour_python.py [DIR])."""
import sys
import tempfile

import pyarrow as pa

import pyhudi

base = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
schema = pa.schema([pa.field("user_id", pa.string(), nullable=False),
                    ("clicks", pa.int64()), ("click_ts", pa.int64()),
                    ("orders", pa.int64()), ("spend", pa.float64())])
# two families, each with its own ordering column after ';' (clicks) or commit-time order (orders)
t = pyhudi.create_table(f"{base}/profiles", schema, "user_id", num_buckets=4,
                        column_families={"clicks": "clicks,click_ts;click_ts", "orders": "orders,spend"})
t.upsert(pa.table({"user_id": ["a", "b", "c"], "clicks": [1, 2, 3], "click_ts": [10, 10, 10],
                   "orders": [0, 1, 2], "spend": [0.0, 9.5, 20.0]}))          # full rows
t.upsert(pa.table({"user_id": ["a", "b"], "clicks": [5, 0], "click_ts": [11, 9]}))  # clicks only; b is late
t.delete(pa.table({"user_id": ["c"]}))                         # a delete block in every family
print(t.read().sort_by("user_id").to_pylist())                 # families joined on the key
print(t.read(columns=["user_id", "spend"], filters=[("spend", ">", 1.0)]).to_pylist())
first = t.timeline[0].requested_time
print(t.read(as_of=first).num_rows)                            # time travel: 3 rows
t.compact(families=["clicks"])                                 # the busy family's logs → its base file
t.compact(full=True)                                           # one complete-row base file per bucket
t.clean(options={"hoodie.cleaner.commits.retained": "1"})      # drop file versions nobody reads
print([(str(i.action), str(i.state)) for i in t.timeline][-3:])
