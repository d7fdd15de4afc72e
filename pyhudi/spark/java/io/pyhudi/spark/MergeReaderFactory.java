package io.pyhudi.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Columnar readers of {@link MergePartition}s (Spark converts to rows where a plan needs rows). */
final class MergeReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final StructType schema;
    private final StructType required;
    private final int batchSize;

    MergeReaderFactory(StructType schema, StructType required, int batchSize) {
        this.schema = schema;
        this.required = required;
        this.batchSize = batchSize;
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
        return true;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        throw new UnsupportedOperationException("pyhudi_merge reads columnar batches only");
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
        return new MergeReader((MergePartition) partition, schema, required, batchSize);
    }
}
