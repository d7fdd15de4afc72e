package io.pyhudi.spark;

import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.vectorized.ColumnVector;

/** Copies one value (or null) of a column between vectors; one per flat Spark type pyhudi reads natively. */
@FunctionalInterface
interface Copier {
    void copyValue(ColumnVector from, int i, WritableColumnVector into, int j);

    default void copy(ColumnVector from, int i, WritableColumnVector into, int j) {
        if (from.isNullAt(i)) {
            into.putNull(j);
        } else {
            into.putNotNull(j);
            copyValue(from, i, into, j);
        }
    }

    static Copier of(DataType type) {
        if (type instanceof BooleanType) {
            return (f, i, t, j) -> t.putBoolean(j, f.getBoolean(i));
        }
        if (type instanceof ByteType) {
            return (f, i, t, j) -> t.putByte(j, f.getByte(i));
        }
        if (type instanceof ShortType) {
            return (f, i, t, j) -> t.putShort(j, f.getShort(i));
        }
        if (type instanceof IntegerType || type instanceof DateType) {
            return (f, i, t, j) -> t.putInt(j, f.getInt(i));
        }
        if (type instanceof LongType || type instanceof TimestampType || type instanceof TimestampNTZType) {
            return (f, i, t, j) -> t.putLong(j, f.getLong(i));
        }
        if (type instanceof FloatType) {
            return (f, i, t, j) -> t.putFloat(j, f.getFloat(i));
        }
        if (type instanceof DoubleType) {
            return (f, i, t, j) -> t.putDouble(j, f.getDouble(i));
        }
        if (type instanceof DecimalType) {
            DecimalType d = (DecimalType) type;
            return (f, i, t, j) -> t.putDecimal(j, f.getDecimal(i, d.precision(), d.scale()), d.precision());
        }
        if (type instanceof StringType || type instanceof BinaryType) {
            return (f, i, t, j) -> t.putByteArray(j, f.getBinary(i));
        }
        return (f, i, t, j) -> {
            throw new UnsupportedOperationException("pyhudi_merge cannot patch a column of type " + type.simpleString());
        };
    }
}
