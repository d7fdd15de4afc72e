package io.pyhudi.spark;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;

import org.apache.parquet.io.InputFile;
import org.apache.parquet.io.SeekableInputStream;

/**
 * A byte range of a local file as a Parquet file: a base file (the whole file) or the content of
 * a Parquet log block, which Hudi writes as a complete Parquet file inside its log file.
 * Reads are positional reads of one FileChannel: no copy of the block, no Hadoop file system.
 */
final class RangeInputFile implements InputFile {
    private final String path;
    private final long offset;
    private final long length;

    RangeInputFile(String path, long offset, long length) {
        this.path = path;
        this.offset = offset;
        this.length = length;
    }

    @Override
    public long getLength() {
        return length;
    }

    @Override
    public SeekableInputStream newStream() throws IOException {
        return new RangeStream(FileChannel.open(Paths.get(path), StandardOpenOption.READ), offset, length);
    }

    @Override
    public String toString() {
        return path + "@" + offset + "+" + length;
    }

    private static final class RangeStream extends SeekableInputStream {
        private final FileChannel channel;
        private final long offset;
        private final long length;
        private long pos;

        RangeStream(FileChannel channel, long offset, long length) {
            this.channel = channel;
            this.offset = offset;
            this.length = length;
        }

        @Override
        public long getPos() {
            return pos;
        }

        @Override
        public void seek(long newPos) throws IOException {
            if (newPos < 0 || newPos > length) {
                throw new EOFException("seek to " + newPos + " outside a range of " + length + " bytes");
            }
            pos = newPos;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : (one[0] & 0xff);
        }

        @Override
        public int read(byte[] bytes, int off, int len) throws IOException {
            return read(ByteBuffer.wrap(bytes, off, len));
        }

        @Override
        public int read(ByteBuffer buffer) throws IOException {
            long left = length - pos;
            if (left <= 0) {
                return buffer.hasRemaining() ? -1 : 0;
            }
            ByteBuffer view = buffer;
            if (buffer.remaining() > left) {
                view = buffer.duplicate();
                view.limit(view.position() + (int) left);
            }
            int n = channel.read(view, offset + pos);
            if (n > 0) {
                if (view != buffer) {
                    buffer.position(buffer.position() + n);
                }
                pos += n;
            }
            return n;
        }

        @Override
        public void readFully(byte[] bytes) throws IOException {
            readFully(ByteBuffer.wrap(bytes));
        }

        @Override
        public void readFully(byte[] bytes, int off, int len) throws IOException {
            readFully(ByteBuffer.wrap(bytes, off, len));
        }

        @Override
        public void readFully(ByteBuffer buffer) throws IOException {
            while (buffer.hasRemaining()) {
                if (read(buffer) < 0) {
                    throw new EOFException("end of the range reached with " + buffer.remaining() + " bytes to read");
                }
            }
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }
}
