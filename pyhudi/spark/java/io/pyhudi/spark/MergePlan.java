package io.pyhudi.spark;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.FileInputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;

import org.apache.spark.sql.types.StructType;

/**
 * The plan file pyhudi's Python planner writes (pyhudi/spark/merge_scan.py): big-endian,
 * {@code MAGIC}, the number of partitions, then per partition its label, its bases (path, byte
 * offset, byte length, column names), the rows of every base, and its patches (a block as a
 * source, then its positions as 32-bit integers).
 */
final class MergePlan {
    static final String MAGIC = "pyhudi-merge-plan-1";

    private MergePlan() {
    }

    static MergePartition[] read(String path, StructType schema) {
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(path), 1 << 16))) {
            String magic = text(in);
            if (!MAGIC.equals(magic)) {
                throw new IllegalStateException("not a pyhudi merge plan (version " + magic + "): " + path);
            }
            MergePartition[] out = new MergePartition[in.readInt()];
            for (int p = 0; p < out.length; p++) {
                String label = text(in);
                MergePartition.Source[] bases = new MergePartition.Source[in.readInt()];
                for (int b = 0; b < bases.length; b++) {
                    bases[b] = source(in);
                }
                long rows = in.readLong();
                MergePartition.Patch[] patches = new MergePartition.Patch[in.readInt()];
                for (int k = 0; k < patches.length; k++) {
                    MergePartition.Source block = source(in);
                    int[] positions = new int[in.readInt()];
                    for (int i = 0; i < positions.length; i++) {
                        positions[i] = in.readInt();
                    }
                    patches[k] = new MergePartition.Patch(block, positions);
                }
                out[p] = check(new MergePartition(label, bases, rows, patches), schema);
            }
            return out;
        } catch (FileNotFoundException e) {
            throw new IllegalStateException("the pyhudi merge plan " + path + " is gone: the Python process that "
                + "planned this read has ended; read the table again", e);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the pyhudi merge plan " + path, e);
        }
    }

    /** Every output column comes from exactly one base; patches carry output columns only. */
    private static MergePartition check(MergePartition partition, StructType schema) {
        Set<String> wanted = new HashSet<>();
        for (String name : schema.fieldNames()) {
            wanted.add(name);
        }
        Set<String> supplied = new HashSet<>();
        for (MergePartition.Source base : partition.bases) {
            for (String name : base.columns) {
                if (!wanted.contains(name) || !supplied.add(name)) {
                    throw new IllegalStateException(partition.label + ": base " + base + " supplies column '"
                        + name + "' twice or outside the schema");
                }
            }
        }
        if (!supplied.equals(wanted)) {
            throw new IllegalStateException(partition.label + ": the bases supply " + supplied + ", not " + wanted);
        }
        for (MergePartition.Patch patch : partition.patches) {
            for (String name : patch.block.columns) {
                if (!wanted.contains(name)) {
                    throw new IllegalStateException(partition.label + ": block " + patch.block
                        + " writes column '" + name + "' outside the schema");
                }
            }
        }
        return partition;
    }

    private static MergePartition.Source source(DataInputStream in) throws IOException {
        String path = text(in);
        long offset = in.readLong();
        long length = in.readLong();
        String[] columns = new String[in.readInt()];
        for (int i = 0; i < columns.length; i++) {
            columns[i] = text(in);
        }
        return new MergePartition.Source(path, offset, length, columns);
    }

    private static String text(DataInputStream in) throws IOException {
        byte[] bytes = new byte[in.readInt()];
        in.readFully(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
