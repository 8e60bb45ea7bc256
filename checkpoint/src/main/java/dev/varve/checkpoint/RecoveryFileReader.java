package dev.varve.checkpoint;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * Reads a recovery file back for binary restore. Every entry's CRC32C is checked, and the count and size must
 * match what the start marker recorded; anything else is a {@link CorruptionException} naming the file and offset —
 * the store refuses to open rather than guess.
 */
public final class RecoveryFileReader {
    /** Receives each restored page image at [0, pageSize) of a direct buffer. */
    public interface PageSink {
        /** One page image of the checkpoint. */
        void accept(long pageId, ByteBuffer image);
    }

    private RecoveryFileReader() {
    }

    /**
     * Reads recovery file {@code n} of the checkpoint described by {@code start} and hands every page to
     * {@code sink}.
     */
    public static void read(CheckpointMarkers markers, CheckpointMarker start, int n, int pageSize, PageSink sink) {
        scan(markers, start, n, pageSize, sink);
    }

    /**
     * Checks recovery file {@code n} of the checkpoint described by {@code start} as {@link #read} does — header, every
     * entry's CRC32C, count and size — without decoding the pages: what an open checks before it restores the first
     * page, at the cost of one read of the file instead of a read and a decompression.
     */
    public static void verify(CheckpointMarkers markers, CheckpointMarker start, int n, int pageSize) {
        scan(markers, start, n, pageSize, null);
    }

    /** Reads and checks the file; decodes and hands every page to {@code sink} unless it is null. */
    private static void scan(CheckpointMarkers markers, CheckpointMarker start, int n, int pageSize, PageSink sink) {
        Path path = markers.recoveryFilePath(start.id(), n);
        FileIOFactory io = markers.io();
        if (!io.exists(path)) throw new CorruptionException("recovery file of checkpoint " + start.id() + " is missing", path, 0);
        try (FileIO file = io.open(path, false)) {
            long size = file.size();
            if (size != start.fileBytes()[n])
                throw new CorruptionException("recovery file holds " + size + " bytes, the start marker recorded " + start.fileBytes()[n], path, Math.min(size, start.fileBytes()[n]));
            Input in = new Input(file, size);
            ByteBuffer h = in.take(RecoveryFileFormat.HEADER_BYTES);
            CRC32C crc = new CRC32C();
            crc.update(h.duplicate().limit(h.position() + 24));
            if (h.getLong(h.position()) != RecoveryFileFormat.MAGIC) throw new CorruptionException("not a recovery file (bad magic)", path, 0);
            // the checksum before the fields it covers: a flipped bit in the version is damage, and read first it was
            // reported as a file of another release ("unsupported recovery file version 5898241")
            if (h.getInt(h.position() + 24) != (int) crc.getValue()) throw new CorruptionException("recovery file header checksum mismatch", path, 24);
            if (h.getInt(h.position() + 8) != RecoveryFileFormat.VERSION)
                throw new CorruptionException("unsupported recovery file version " + h.getInt(h.position() + 8) + " (this build reads "
                        + RecoveryFileFormat.VERSION + ")", path, 8);
            if (h.getLong(h.position() + 12) != start.id()) throw new CorruptionException("recovery file belongs to checkpoint " + h.getLong(h.position() + 12), path, 12);
            // the header's checksum held: the page size it records is the one the store was written with, so another
            // one is the configuration's, not damage (which would send the operator to salvage a sound store)
            if (h.getInt(h.position() + 20) != pageSize) throw new StorageException("recovery file was written with pageSize " + h.getInt(h.position() + 20)
                    + " but the store is configured with " + pageSize + "; an existing store keeps its page size", path);
            ByteBuffer payload = ByteBuffer.allocateDirect(PageCodec.maxEncodedBytes(pageSize));
            ByteBuffer image = ByteBuffer.allocateDirect(pageSize);
            PageCodec[] codecs = PageCodec.values();
            int entries = 0;
            while (in.remaining() > 0) {
                long at = in.offset();
                ByteBuffer e = in.take(RecoveryFileFormat.ENTRY_HEADER_BYTES);
                int p = e.position();
                long pageId = e.getLong(p);
                int codec = e.get(p + 8);
                int len = e.getInt(p + 9);
                int stored = e.getInt(p + RecoveryFileFormat.ENTRY_CRC_OFFSET);
                if (codec < 0 || codec >= codecs.length || len < 0 || len > payload.capacity() || len > in.remaining())
                    throw new CorruptionException("recovery file entry header is invalid (codec " + codec + ", length " + len + ")", path, at);
                crc.reset();
                crc.update(e.duplicate().limit(p + RecoveryFileFormat.ENTRY_CRC_OFFSET));
                ByteBuffer body = in.take(len);
                crc.update(body.duplicate());
                if (stored != (int) crc.getValue()) throw new CorruptionException("recovery file entry checksum mismatch (page " + pageId + ")", path, at);
                entries++;
                if (sink == null) continue;
                payload.clear();
                payload.put(0, body, body.position(), len);
                try {
                    codecs[codec].decode(payload, len, image, pageSize);
                } catch (IOException ex) {
                    throw new CorruptionException("recovery file entry cannot be decoded: " + ex.getMessage(), path, at);
                }
                sink.accept(pageId, image);
            }
            if (entries != start.fileEntries()[n])
                throw new CorruptionException("recovery file holds " + entries + " entries, the start marker recorded " + start.fileEntries()[n], path, size);
        } catch (IOException e) {
            throw new StorageException("cannot read recovery file: " + e.getMessage(), path, e);
        }
    }

    /** Sequential buffered reading of a file; {@link #take} returns a view of the next n bytes. */
    private static final class Input {
        private final FileIO file;
        private final long size;
        private ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20).order(ByteOrder.LITTLE_ENDIAN).limit(0);
        private long bufStart;

        Input(FileIO file, long size) {
            this.file = file;
            this.size = size;
        }

        long offset() {
            return bufStart + buf.position();
        }

        long remaining() {
            return size - offset();
        }

        ByteBuffer take(int n) throws IOException {
            if (n > remaining()) throw new CorruptionException("recovery file ends inside an entry", file.path(), offset());
            if (buf.remaining() < n) {
                long at = offset();
                if (n > buf.capacity()) buf = ByteBuffer.allocateDirect(n).order(ByteOrder.LITTLE_ENDIAN);
                buf.clear();
                buf.limit((int) Math.min(buf.capacity(), size - at));
                file.read(buf, at);
                buf.flip();
                bufStart = at;
            }
            ByteBuffer view = buf.duplicate().order(ByteOrder.LITTLE_ENDIAN);
            view.limit(buf.position() + n);
            buf.position(buf.position() + n);
            return view;
        }
    }
}
