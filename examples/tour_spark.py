"""Tour, part 2: Spark DataFrames and SQL (run: python examples/tour_spark.py [DIR])."""
import sys
import tempfile

from pyhudi.spark.session import local_session
import pyhudi.spark

base = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
spark = local_session("tour", log_dir=base)       # local[2]; Spark's own log goes to DIR/spark.log
pyhudi.spark.register(spark)
path = f"{base}/orders"
df = spark.createDataFrame([("a", 1, 9.5), ("b", 2, 20.0)], "user_id string, orders bigint, spend double")
df.write.format("pyhudi").mode("append").options(**{
    "hoodie.table.name": "orders", "hoodie.datasource.write.recordkey.field": "user_id",
    "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "4"}).save(path)
spark.read.format("pyhudi").load(path).where("spend > 10").show()
pyhudi.spark.sql(spark, f"""CREATE TABLE users (user_id STRING NOT NULL, clicks BIGINT, country STRING)
    USING pyhudi LOCATION '{base}/users'
    TBLPROPERTIES (primaryKey = 'user_id', 'hoodie.index.type' = 'BUCKET', 'hoodie.bucket.index.num.buckets' = '2',
                   'hoodie.colFamily.activity' = 'clicks', 'hoodie.colFamily.profile' = 'country')""")
pyhudi.spark.sql(spark, "INSERT INTO users VALUES ('a', 3, 'FR'), ('b', 1, 'US')")
pyhudi.spark.sql(spark, "UPDATE users SET clicks = clicks + 1 WHERE user_id = 'a'")  # one family written
pyhudi.spark.sql(spark, "SELECT * FROM users ORDER BY user_id").show()
pyhudi.spark.sql(spark, "CALL run_compaction(table => 'users', op => 'scheduleAndExecute')").show()
spark.stop()
