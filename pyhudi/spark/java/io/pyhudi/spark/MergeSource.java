package io.pyhudi.spark;

import java.util.Collections;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * pyhudi's merge reader for Spark: the file groups of a snapshot read whose slices merge by record
 * position (a base file, or an insert's first Parquet log block, with later Parquet log blocks
 * that rewrite some of its rows). pyhudi's Python planner decides everything — which files and
 * blocks are visible, that their positions are usable, which columns each supplies — and writes it
 * as a plan file ({@link MergePlan}); this source only executes the plan: Spark's vectorized
 * Parquet reader reads the base, and the blocks' rows are written over the rows at their positions
 * in each columnar batch. Options: {@code plan} (the plan file's path, read on the driver) and
 * {@code schema} (the read's Spark schema as JSON).
 */
public final class MergeSource implements TableProvider, DataSourceRegister {
    @Override
    public String shortName() {
        return "pyhudi_merge";
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        String json = options.get("schema");
        if (json == null) {
            throw new IllegalArgumentException("pyhudi_merge needs the option 'schema' (the read's schema as JSON)");
        }
        return (StructType) DataType.fromJson(json);
    }

    @Override
    public boolean supportsExternalMetadata() {
        return true;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new MergeTable(schema);
    }

    static final class MergeTable implements Table, SupportsRead {
        private final StructType schema;

        MergeTable(StructType schema) {
            this.schema = schema;
        }

        @Override
        public String name() {
            return "pyhudi_merge";
        }

        @Override
        @SuppressWarnings("deprecation")
        public StructType schema() {
            return schema;
        }

        @Override
        public Set<TableCapability> capabilities() {
            return Collections.unmodifiableSet(EnumSet.of(TableCapability.BATCH_READ));
        }

        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            String plan = options.get("plan");
            if (plan == null) {
                throw new IllegalArgumentException("pyhudi_merge needs the option 'plan' (the plan file's path)");
            }
            return new MergeScanBuilder(schema, plan);
        }
    }

    /** Spark's column pruning: only the columns the query uses are read (a count reads one). */
    static final class MergeScanBuilder implements ScanBuilder, SupportsPushDownRequiredColumns {
        private final StructType schema;
        private final String plan;
        private StructType required;

        MergeScanBuilder(StructType schema, String plan) {
            this.schema = schema;
            this.plan = plan;
            this.required = schema;
        }

        @Override
        public void pruneColumns(StructType requiredSchema) {
            required = requiredSchema;
        }

        @Override
        public Scan build() {
            return new MergeScan(schema, required, plan);
        }
    }

    static final class MergeScan implements Scan, Batch {
        private final StructType schema;
        private final StructType required;
        private final String plan;

        MergeScan(StructType schema, StructType required, String plan) {
            this.schema = schema;
            this.required = required;
            this.plan = plan;
        }

        @Override
        public StructType readSchema() {
            return required;
        }

        @Override
        public String description() {
            return "pyhudi_merge " + plan;
        }

        @Override
        public Batch toBatch() {
            return this;
        }

        @Override
        public InputPartition[] planInputPartitions() {
            MergePartition[] partitions = MergePlan.read(plan, schema);
            for (int p = 0; p < partitions.length; p++) {
                partitions[p] = partitions[p].pruned(required.fieldNames());
            }
            return partitions;
        }

        @Override
        public PartitionReaderFactory createReaderFactory() {
            return new MergeReaderFactory(schema, required, SQLConf.get().parquetVectorizedReaderBatchSize());
        }
    }
}
