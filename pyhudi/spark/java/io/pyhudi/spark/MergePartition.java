package io.pyhudi.spark;

import java.io.Serializable;

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
}
