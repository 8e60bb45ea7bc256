package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * An append-only file of fixed 32-byte entries of three longs, each with a CRC32C: a Maplog level (page id,
 * snapshot, Pagelog address), a Skippy uplink index (start, end of a node's promoted mappings in the level above),
 * the drop log, the checkpoint marks, the rank changes' positions or the lazy-ranking moves.
 *
 * <pre>
 * header (32): magic (8) | version (4) | kind (4) | level (4) | nodeEntries (4) | reserved (4) | crc32c of [0,28) (4)
 * entry  (32): a (8) | b (8) | c (8) | crc32c of [0,24) (4) | reserved (4)
 * </pre>
 * Format versions: 1 — initial layout. At open a torn tail (an entry whose CRC fails, or a partial entry) is cut:
 * entries are appended in order and made durable in order, so everything before the first bad one is good.
 */
final class MaplogFile implements AutoCloseable {
    static final long MAGIC = 0x564152564d41504cL; // "VARVMAPL"
    static final int VERSION = 1;
    static final int KIND_MAPPINGS = 1;
    static final int KIND_UPLINKS = 2;
    static final int KIND_DROPS = 3;
    /** Lazy-ranking copies: (checkpoint mark, snapshot, level &lt;&lt; 56 | Start at that level). */
    static final int KIND_MOVES = 4;
    /** Rank changes: (walLsn, snapshot, level &lt;&lt; 56 | that level's Maplog position then). */
    static final int KIND_JOINS = 5;
    static final int HEADER = 32;
    static final int ENTRY = 32;
    private static final Logger LOG = LoggerFactory.getLogger(MaplogFile.class);

    private static final int BUFFERED_ENTRIES = 2048;
    private final FileIO file;
    /** Entries appended but not written yet: they are written in one go when it fills, at {@link #force}, or on truncate. */
    private final ByteBuffer unwritten = ByteBuffer.allocate(ENTRY * BUFFERED_ENTRIES).order(ByteOrder.LITTLE_ENDIAN);
    private final CRC32C crc = new CRC32C();
    private volatile long count;
    /** Entries in the file; [written, count) are in {@link #unwritten}. */
    private long written;
    private boolean dirty;

    MaplogFile(FileIOFactory io, Path path, int kind, int level, int nodeEntries) {
        try {
            if (!io.exists(path)) {
                ByteBuffer h = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
                h.putLong(0, MAGIC).putInt(8, VERSION).putInt(12, kind).putInt(16, level).putInt(20, nodeEntries);
                CRC32C c = new CRC32C();
                c.update(h.array(), 0, 28);
                h.putInt(28, (int) c.getValue());
                file = DurableFiles.create(io, path, h);
                count = 0;
                written = 0;
            } else {
                file = io.open(path, false);
                checkHeader(path, kind, level, nodeEntries);
                count = validEntries(path);
                written = count;
            }
        } catch (IOException e) {
            throw new StorageException("cannot open archive file: " + e.getMessage(), path, e);
        }
    }

    private void checkHeader(Path path, int kind, int level, int nodeEntries) throws IOException {
        ByteBuffer h = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
        file.read(h, 0);
        CRC32C c = new CRC32C();
        c.update(h.array(), 0, 28);
        if (h.getInt(28) != (int) c.getValue() || h.getLong(0) != MAGIC) throw new CorruptionException("archive file header is corrupt", path, 0);
        if (h.getInt(8) != VERSION) throw new CorruptionException("unsupported archive file version " + h.getInt(8), path, 8);
        if (h.getInt(12) != kind || h.getInt(16) != level) throw new CorruptionException("archive file holds kind " + h.getInt(12) + " level " + h.getInt(16), path, 12);
        if (h.getInt(20) != nodeEntries)
            throw new IllegalArgumentException("the archive was written with skippyNodeEntries=" + h.getInt(20) + " but the store is configured with "
                    + nodeEntries + " [file " + path + "]");
    }

    /** Counts valid entries and cuts a torn tail. */
    private long validEntries(Path path) throws IOException {
        long size = file.size();
        long n = (size - HEADER) / ENTRY;
        ByteBuffer chunk = ByteBuffer.allocate(ENTRY * 2048).order(ByteOrder.LITTLE_ENDIAN);
        long good = 0;
        outer:
        for (long at = 0; at < n; ) {
            int batch = (int) Math.min(2048, n - at);
            chunk.clear().limit(batch * ENTRY);
            file.read(chunk, HEADER + at * ENTRY);
            for (int i = 0; i < batch; i++) {
                if (!entryValid(chunk, i * ENTRY)) break outer;
                good++;
            }
            at += batch;
        }
        if (good * ENTRY + HEADER != size) {
            LOG.warn("archive file {}: torn tail cut after {} entries ({} bytes dropped)", path, good, size - (good * ENTRY + HEADER));
            file.truncate(HEADER + good * ENTRY);
            file.force();
        }
        return good;
    }

    private boolean entryValid(ByteBuffer b, int off) {
        crc.reset();
        crc.update(b.array(), b.arrayOffset() + off, 24);
        return b.getInt(off + 24) == (int) crc.getValue();
    }

    Path path() {
        return file.path();
    }

    long count() {
        return count;
    }

    /** Appends an entry (single writer: the archiver, or recovery before any view exists). */
    synchronized void append(long a, long b, long c) {
        if (!unwritten.hasRemaining()) writeBuffered();
        int at = unwritten.position();
        unwritten.putLong(a).putLong(b).putLong(c);
        crc.reset();
        crc.update(unwritten.array(), at, 24);
        unwritten.putInt((int) crc.getValue()).putInt(0);
        count++;
    }

    private void writeBuffered() {
        if (unwritten.position() == 0) return;
        unwritten.flip();
        try {
            file.write(unwritten, HEADER + written * ENTRY);
        } catch (IOException e) {
            throw new StorageException("archive append failed: " + e.getMessage(), file.path(), e);
        } finally {
            unwritten.clear();
        }
        written = count;
        dirty = true;
    }

    /** Reads entries [from, from + n) into the arrays (any of which may be null), checking each CRC. */
    synchronized void read(long from, int n, long[] a, long[] b, long[] c) {
        if (from < 0 || from + n > count) throw new IllegalArgumentException("entries [" + from + ", " + (from + n) + ") outside [0, " + count + ")");
        int fromFile = (int) Math.max(0, Math.min(n, written - from));
        if (fromFile > 0) {
            if (scratch.capacity() < fromFile * ENTRY) scratch = ByteBuffer.allocate(fromFile * ENTRY).order(ByteOrder.LITTLE_ENDIAN);
            scratch.clear().limit(fromFile * ENTRY);
            try {
                if (file.read(scratch, HEADER + from * ENTRY) < fromFile * ENTRY)
                    throw new CorruptionException("archive file shorter than its entry count", file.path(), HEADER + from * ENTRY);
            } catch (IOException e) {
                throw new StorageException("archive read failed: " + e.getMessage(), file.path(), e);
            }
            decode(scratch, 0, fromFile, from, a, b, c, 0);
        }
        if (fromFile < n) decode(unwritten, (int) (from + fromFile - written) * ENTRY, n - fromFile, from + fromFile, a, b, c, fromFile);
    }

    private ByteBuffer scratch = ByteBuffer.allocate(ENTRY * 256).order(ByteOrder.LITTLE_ENDIAN);

    private void decode(ByteBuffer buf, int start, int n, long firstEntry, long[] a, long[] b, long[] c, int into) {
        CRC32C check = new CRC32C();
        for (int i = 0; i < n; i++) {
            int off = start + i * ENTRY;
            check.reset();
            check.update(buf.array(), off, 24);
            if (buf.getInt(off + 24) != (int) check.getValue())
                throw new CorruptionException("archive entry checksum mismatch", file.path(), HEADER + (firstEntry + i) * ENTRY);
            if (a != null) a[into + i] = buf.getLong(off);
            if (b != null) b[into + i] = buf.getLong(off + 8);
            if (c != null) c[into + i] = buf.getLong(off + 16);
        }
    }

    /** Writes buffered entries and fsyncs, if anything was appended since the last one. */
    synchronized void force() {
        writeBuffered();
        if (!dirty) return;
        try {
            file.force();
        } catch (IOException e) {
            throw new StorageException("archive fsync failed: " + e.getMessage(), file.path(), e);
        }
        dirty = false;
    }

    /** Cuts the file to {@code n} entries. */
    synchronized void truncate(long n) {
        if (n >= count) return;
        writeBuffered();
        try {
            file.truncate(HEADER + n * ENTRY);
            file.force();
        } catch (IOException e) {
            throw new StorageException("cannot truncate archive file: " + e.getMessage(), file.path(), e);
        }
        count = n;
        written = n;
    }

    @Override
    public synchronized void close() {
        try {
            writeBuffered();
            file.close();
        } catch (IOException e) {
            throw new StorageException("cannot close archive file", file.path(), e);
        }
    }
}
