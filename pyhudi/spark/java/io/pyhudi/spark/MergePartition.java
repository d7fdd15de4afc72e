package io.pyhudi.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.apache.spark.sql.connector.read.InputPartition;

/** One file group's merge: its base reads (aligned: the same rows in the same row groups) and its blocks. */
final class MergePartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    /** A Parquet file, or a byte range of a log file holding a block's Parquet content. */
    static final class Source implements Serializable {
        private static final long serialVersionUID = 1L;
        final String path;
        final long offset;
        final long length;
        final String[] columns;

        Source(String path, long offset, long length, String[] columns) {
            this.path = path;
            this.offset = offset;
            this.length = length;
            this.columns = columns;
        }

        Source only(Set<String> keep) {
            return new Source(path, offset, length, Arrays.stream(columns).filter(keep::contains).toArray(String[]::new));
        }

        RangeInputFile file() {
            return new RangeInputFile(path, offset, length);
        }

        @Override
        public String toString() {
            return path + "@" + offset + "+" + length;
        }
    }

    /** A log block's rows and the base rows they overwrite (increasing; the i-th record to the i-th). */
    static final class Patch implements Serializable {
        private static final long serialVersionUID = 1L;
        final Source block;
        final int[] positions;

        Patch(Source block, int[] positions) {
            this.block = block;
            this.positions = positions;
        }
    }

    final String label;
    final Source[] bases;
    final long rows;
    final Patch[] patches;

    MergePartition(String label, Source[] bases, long rows, Patch[] patches) {
        this.label = label;
        this.bases = bases;
        this.rows = rows;
        this.patches = patches;
    }

    /**
     * This merge reading only {@code names}: bases and blocks that supply none of them are not
     * opened, but one base always is (its rows are the rows; a count reads one column of it).
     */
    MergePartition pruned(String[] names) {
        Set<String> keep = new HashSet<>(Arrays.asList(names));
        List<Source> kept = new ArrayList<>();
        for (Source base : bases) {
            Source only = base.only(keep);
            if (only.columns.length > 0) {
                kept.add(only);
            }
        }
        if (kept.isEmpty()) {  // (a count: the first base supplying a column, that column only)
            Source first = Arrays.stream(bases).filter(b -> b.columns.length > 0).findFirst().orElse(bases[0]);
            kept.add(new Source(first.path, first.offset, first.length,
                Arrays.copyOf(first.columns, Math.min(1, first.columns.length))));
        }
        List<Patch> writes = new ArrayList<>();
        for (Patch patch : patches) {
            Source only = patch.block.only(keep);
            if (only.columns.length > 0) {
                writes.add(new Patch(only, patch.positions));
            }
        }
        return new MergePartition(label, kept.toArray(new Source[0]), rows, writes.toArray(new Patch[0]));
    }
}
