package io.pyhudi.spark;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapred.FileSplit;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.io.SeekableInputStream;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.execution.datasources.parquet.ParquetReadSupport;
import org.apache.spark.sql.execution.datasources.parquet.VectorizedParquetRecordReader;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

import scala.Option;

/**
 * Reads one {@link MergePartition}: its bases in lockstep, batch by batch, each batch with the
 * blocks' rows written over the rows at their positions, blocks in commit order (the later write
 * wins). A block carries only its family's columns; the others keep the base's values. A column
 * that Spark's reader left dictionary-encoded is copied out before it is patched.
 */
final class MergeReader implements PartitionReader<ColumnarBatch> {
    private final MergePartition partition;
    private final StructType table;
    private final StructType schema;
    private final int batchSize;
    private final List<Opened> bases = new ArrayList<>();
    private final List<PatchCursor> patches = new ArrayList<>();
    private final int[] baseOf;
    private final int[] columnOf;
    private final Copier[] copiers;
    private final OnHeapColumnVector[] decoded;
    private final ColumnVector[] out;
    private final Map<String, Integer> index;
    private ColumnarBatch batch;
    private long start;

    MergeReader(MergePartition partition, StructType table, StructType schema, int batchSize) {
        this.partition = partition;
        this.table = table;
        this.schema = schema;
        this.batchSize = batchSize;
        int width = schema.fields().length;
        baseOf = new int[width];
        columnOf = new int[width];
        copiers = new Copier[width];
        decoded = new OnHeapColumnVector[width];
        out = new ColumnVector[width];
        Map<String, Integer> index = new HashMap<>();
        for (int i = 0; i < width; i++) {
            index.put(schema.fields()[i].name(), i);
            copiers[i] = Copier.of(schema.fields()[i].dataType());
        }
        this.index = index;
        Configuration conf = readerConf();
        try {
            for (int b = 0; b < partition.bases.length; b++) {
                MergePartition.Source source = partition.bases[b];
                Opened opened = Opened.of(source, columns(source.columns), conf, batchSize);
                bases.add(opened);
                if (opened.rows != partition.rows) {
                    throw new IllegalStateException(label() + ": " + source + " holds " + opened.rows
                        + " rows, the plan says " + partition.rows);
                }
                for (int j = 0; j < source.columns.length; j++) {
                    Integer i = index.get(source.columns[j]);
                    if (i == null) {
                        continue;  // (a column read only for the row count: a count reads no output column)
                    }
                    baseOf[i] = b;
                    columnOf[i] = j;
                    opened.checkType(j, schema.fields()[i], label());
                }
            }
            for (MergePartition.Patch patch : partition.patches) {
                Opened opened = Opened.of(patch.block, columns(patch.block.columns), conf, batchSize);
                int[] targets = new int[patch.block.columns.length];
                patches.add(new PatchCursor(opened, patch.positions, targets));  // (closed by close() if a check fails)
                if (opened.rows != patch.positions.length) {
                    throw new IllegalStateException(label() + ": block " + patch.block + " holds " + opened.rows
                        + " rows for " + patch.positions.length + " positions");
                }
                for (int j = 0; j < targets.length; j++) {
                    targets[j] = index.get(patch.block.columns[j]);
                    opened.checkType(j, schema.fields()[targets[j]], label());
                }
            }
        } catch (IOException e) {
            close();
            throw new UncheckedIOException(label() + ": cannot open", e);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** The Hadoop settings Spark's Parquet scan gives its vectorized reader, from the session's SQL conf. */
    private static Configuration readerConf() {
        SQLConf sql = SQLConf.get();
        Configuration conf = new Configuration();
        conf.set("parquet.read.support.class", ParquetReadSupport.class.getName());
        conf.set(SQLConf.SESSION_LOCAL_TIMEZONE().key(), sql.sessionLocalTimeZone());
        conf.setBoolean(SQLConf.CASE_SENSITIVE().key(), true);
        conf.setBoolean(SQLConf.PARQUET_BINARY_AS_STRING().key(), false);
        conf.setBoolean(SQLConf.PARQUET_INT96_AS_TIMESTAMP().key(), true);
        conf.setBoolean(SQLConf.PARQUET_INFER_TIMESTAMP_NTZ_ENABLED().key(), true);
        conf.setBoolean(SQLConf.LEGACY_PARQUET_NANOS_AS_LONG().key(), false);
        conf.setBoolean(SQLConf.NESTED_SCHEMA_PRUNING_ENABLED().key(), false);
        return conf;
    }

    /** The table's fields of {@code names}, in that order: what Spark's reader is asked for. */
    private StructType columns(String[] names) {
        StructField[] fields = new StructField[names.length];
        for (int j = 0; j < names.length; j++) {
            fields[j] = table.apply(names[j]);
        }
        return new StructType(fields);
    }

    private String label() {
        return "pyhudi merge of file group " + partition.label;
    }

    @Override
    public boolean next() throws IOException {
        if (batch != null) {
            start += batch.numRows();
        }
        int rows = -1;
        for (Opened base : bases) {
            if (!base.reader.nextBatch()) {
                if (start != partition.rows) {
                    throw new IllegalStateException(label() + ": " + base.source + " ended at row " + start);
                }
                return false;
            }
            int n = base.reader.resultBatch().numRows();
            if (rows >= 0 && n != rows) {
                throw new IllegalStateException(label() + ": base files not aligned at row " + start);
            }
            rows = n;
        }
        for (int i = 0; i < out.length; i++) {
            out[i] = bases.get(baseOf[i]).reader.resultBatch().column(columnOf[i]);
        }
        for (PatchCursor patch : patches) {
            patch.apply(this, start, rows);
        }
        if (batch == null) {
            batch = new ColumnarBatch(out, rows);
        }
        batch.setNumRows(rows);
        return true;
    }

    /** The output vector of column {@code i}, writable in place (a copy of it when dictionary-encoded). */
    WritableColumnVector writable(int i, int rows) {
        ColumnVector current = out[i];
        if (current == decoded[i]) {
            return decoded[i];
        }
        WritableColumnVector vector = (WritableColumnVector) current;
        if (!vector.hasDictionary()) {
            return vector;
        }
        if (decoded[i] == null) {
            decoded[i] = new OnHeapColumnVector(batchSize, schema.fields()[i].dataType());
        }
        OnHeapColumnVector copy = decoded[i];
        copy.reset();
        Copier copier = copiers[i];
        for (int r = 0; r < rows; r++) {
            copier.copy(vector, r, copy, r);
        }
        out[i] = copy;
        return copy;
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    @Override
    public void close() {
        UncheckedIOException failed = null;  // (every file is closed, whichever fails to)
        List<Opened> opened = new ArrayList<>(bases);
        for (PatchCursor patch : patches) {
            opened.add(patch.block);
        }
        for (Opened file : opened) {
            try {
                file.close();
            } catch (UncheckedIOException e) {
                failed = failed == null ? e : failed;
            }
        }
        for (OnHeapColumnVector vector : decoded) {
            if (vector != null) {
                vector.close();
            }
        }
        if (failed != null) {
            throw failed;
        }
    }

    /** A block's rows in position order, handed out batch by batch as the base's batches pass. */
    private static final class PatchCursor {
        final Opened block;
        final int[] positions;
        final int[] targets;
        int next;
        int loaded;
        int batchStart;

        PatchCursor(Opened block, int[] positions, int[] targets) {
            this.block = block;
            this.positions = positions;
            this.targets = targets;
        }

        void apply(MergeReader reader, long start, int rows) throws IOException {
            long end = start + rows;
            while (next < positions.length && positions[next] < end) {
                if (next >= loaded) {
                    if (!block.reader.nextBatch()) {
                        throw new IllegalStateException(reader.label() + ": block " + block.source + " ended early");
                    }
                    batchStart = loaded;
                    loaded += block.reader.resultBatch().numRows();
                }
                int stop = next;
                while (stop < loaded && stop < positions.length && positions[stop] < end) {
                    stop++;
                }
                ColumnarBatch rowsOfBlock = block.reader.resultBatch();
                for (int j = 0; j < targets.length; j++) {
                    int i = targets[j];
                    WritableColumnVector into = reader.writable(i, rows);
                    ColumnVector from = rowsOfBlock.column(j);
                    Copier copier = reader.copiers[i];
                    for (int k = next; k < stop; k++) {
                        copier.copy(from, k - batchStart, into, (int) (positions[k] - start));
                    }
                }
                next = stop;
            }
        }
    }

    /** A Parquet source read by Spark's vectorized reader, its columns in the source's order. */
    private static final class Opened {
        final MergePartition.Source source;
        final VectorizedParquetRecordReader reader;
        final long rows;

        private Opened(MergePartition.Source source, VectorizedParquetRecordReader reader, long rows) {
            this.source = source;
            this.reader = reader;
            this.rows = rows;
        }

        static Opened of(MergePartition.Source source, StructType columns, Configuration conf, int batchSize)
                throws IOException {
            RangeInputFile range = source.file();
            SeekableInputStream stream = range.newStream();
            try {
                ParquetMetadata footer = ParquetFileReader.readFooter(range, ParquetReadOptions.builder().build(), stream);
                Path path = new Path(new File(source.path).toURI());  // (a local file, whatever fs.defaultFS says)
                conf.set(ParquetReadSupport.SPARK_ROW_REQUESTED_SCHEMA(), columns.json());
                TaskAttemptContextImpl context = new TaskAttemptContextImpl(conf, new TaskAttemptID());
                VectorizedParquetRecordReader reader = new VectorizedParquetRecordReader(false, batchSize);
                reader.initialize(new FileSplit(path, 0, source.length, (String[]) null), context,
                    Option.apply(HadoopInputFile.fromPath(path, conf)), Option.apply(stream), Option.apply(footer));
                reader.initBatch(new StructType(), InternalRow.empty());
                reader.enableReturningBatches();
                long rows = 0;
                for (BlockMetaData group : footer.getBlocks()) {
                    rows += group.getRowCount();
                }
                return new Opened(source, reader, rows);
            } catch (IOException | InterruptedException | RuntimeException e) {
                stream.close();
                throw e instanceof IOException ? (IOException) e : new IOException(e);
            }
        }

        void checkType(int column, StructField expected, String label) {
            DataType read = reader.resultBatch().column(column).dataType();
            if (!read.equals(expected.dataType())) {
                throw new IllegalStateException(label + ": " + source + " column '" + expected.name() + "' reads as "
                    + read.simpleString() + ", the read's schema says " + expected.dataType().simpleString());
            }
        }

        void close() {
            try {
                reader.close();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
