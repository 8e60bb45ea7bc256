package dev.varve.snapshot;

import dev.varve.core.io.Closeables;
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
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * An append-only log of fixed 32-byte entries of three longs, each with a CRC32C: a Maplog level (page id,
 * snapshot, Pagelog address), a Skippy uplink index (start, end of a node's promoted mappings in the level above),
 * the drop log, the checkpoint marks, the rank changes' positions or the lazy-ranking moves.
 *
 * <p>An entry's position is its global index. The entries live in part files of {@code partEntries} entries each:
 * the first is {@code <name>}, every later one {@code <name>.<position of its first entry>}, so that the Maplog's
 * portions no snapshot reads any more go whole ({@link #reclaimBefore}), like Pagelog segments. Logs that are never
 * reclaimed use one part.
 *
 * <pre>
 * header (32): magic (8) | version (4) | kind (4) | level (4) | nodeEntries (4) | reserved (4) | crc32c of [0,28) (4)
 * entry  (32): a (8) | b (8) | c (8) | crc32c of [0,24) (4) | reserved (4)
 * </pre>
 * Format versions: 1 — initial layout. Opening only reads: the last part's entries are checked ({@link LogScan}), and
 * what follows the first bad one is cut by {@link #truncate} once recovery has decided that it lies past what the
 * recovered checkpoint mark made durable ({@link #checkDurable}). A missing log is created only for a new archive.
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
    /** Checkpoint marks ({@link ArchiveMarks}); archives written before it existed hold their marks as KIND_UPLINKS, level -1. */
    static final int KIND_MARKS = 6;
    static final int HEADER = 32;
    static final int ENTRY = 32;
    /** Part size of logs that are never reclaimed: one part. */
    static final long ONE_PART = Long.MAX_VALUE;
    private static final Logger LOG = LoggerFactory.getLogger(MaplogFile.class);
    /** Whether a missing log may be created (a new archive) or is corruption. */
    enum Missing { CREATE, CORRUPT }

    private static final int BUFFERED_ENTRIES = 2048;
    private final FileIOFactory io;
    private final Path path;
    private final int kind;
    private final int level;
    private final int nodeEntries;
    private final long partEntries;
    /** Position of each part's first entry → the part. */
    private final TreeMap<Long, FileIO> parts = new TreeMap<>();
    /** Entries appended but not written yet: they are written in one go when it fills, at {@link #force}, or on truncate. */
    private final ByteBuffer unwritten = ByteBuffer.allocate(ENTRY * BUFFERED_ENTRIES).order(ByteOrder.LITTLE_ENDIAN);
    private final CRC32C crc = new CRC32C();
    private volatile long count;
    /** Entries in the files; [written, count) are in {@link #unwritten}. */
    private long written;
    /** Parts written since the last fsync. */
    private final java.util.Set<FileIO> dirty = new java.util.HashSet<>();
    private long reclaimedBytes;
    /** The kind in the file's header ({@link #kind}, or KIND_UPLINKS for marks of an older archive). */
    private int foundKind;
    /** The last part's entries as found at open; null once its tail was cut or when the log was created. */
    private LogScan tail;

    MaplogFile(FileIOFactory io, Path path, int kind, int level, int nodeEntries, Missing missing) {
        this(io, path, kind, level, nodeEntries, ONE_PART, missing);
    }

    MaplogFile(FileIOFactory io, Path path, int kind, int level, int nodeEntries, long partEntries, Missing missing) {
        this.io = io;
        this.path = path;
        this.kind = kind;
        this.level = level;
        this.nodeEntries = nodeEntries;
        this.partEntries = partEntries;
        this.foundKind = kind;
        try {
            String name = path.getFileName().toString();
            for (Path p : io.list(path.getParent(), name)) {
                long first = firstOf(p.getFileName().toString(), name);
                if (first < 0 || DurableFiles.isTemp(p)) continue; // a part creation cut short: deleted by recovery
                FileIO f = io.open(p, false);
                parts.put(first, f);
                checkHeader(f);
            }
            if (parts.isEmpty()) {
                if (missing == Missing.CORRUPT) throw new CorruptionException("archive file is missing", path, 0);
                parts.put(0L, DurableFiles.create(io, path, header()));
                count = 0;
            } else {
                checkContiguous();
                Map.Entry<Long, FileIO> last = parts.lastEntry();
                tail = LogScan.of(last.getValue(), HEADER, ENTRY, this::entryValid);
                count = last.getKey() + tail.valid;
            }
            written = count;
        } catch (IOException | RuntimeException e) {
            Closing.closeAll(e, parts.values());
            if (e instanceof RuntimeException r) throw r;
            throw new StorageException("cannot open archive file: " + e.getMessage(), path, e);
        }
    }

    /** The position of the first entry of the part file {@code fileName} of log {@code name}; -1 for other files. */
    private static long firstOf(String fileName, String name) {
        if (fileName.equals(name)) return 0;
        if (!fileName.startsWith(name + ".")) return -1;
        try {
            return Long.parseLong(fileName.substring(name.length() + 1));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private Path partPath(long first) {
        return first == 0 ? path : path.resolveSibling(path.getFileName() + "." + first);
    }

    private ByteBuffer header() {
        ByteBuffer h = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
        h.putLong(0, MAGIC).putInt(8, VERSION).putInt(12, kind).putInt(16, level).putInt(20, nodeEntries);
        CRC32C c = new CRC32C();
        c.update(h.array(), 0, 28);
        h.putInt(28, (int) c.getValue());
        return h;
    }

    private void checkHeader(FileIO f) throws IOException {
        ByteBuffer h = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
        if (f.read(h, 0) < HEADER) throw new CorruptionException("archive file header truncated", f.path(), 0);
        CRC32C c = new CRC32C();
        c.update(h.array(), 0, 28);
        if (h.getInt(28) != (int) c.getValue() || h.getLong(0) != MAGIC) throw new CorruptionException("archive file header is corrupt", f.path(), 0);
        if (h.getInt(8) != VERSION) throw new CorruptionException("unsupported archive file version " + h.getInt(8), f.path(), 8);
        boolean olderMarks = kind == KIND_MARKS && h.getInt(12) == KIND_UPLINKS;
        if ((h.getInt(12) != kind && !olderMarks) || h.getInt(16) != level)
            throw new CorruptionException("archive file holds kind " + h.getInt(12) + " level " + h.getInt(16), f.path(), 12);
        foundKind = h.getInt(12);
        if (h.getInt(20) != nodeEntries)
            throw new IllegalArgumentException("the archive was written with skippyNodeEntries=" + h.getInt(20) + " but the store is configured with "
                    + nodeEntries + " [file " + f.path() + "]");
    }

    /** Every part but the last holds exactly the entries up to the next one: a gap is a lost part. */
    private void checkContiguous() throws IOException {
        Map.Entry<Long, FileIO> prev = null;
        for (Map.Entry<Long, FileIO> e : parts.entrySet()) {
            if (prev != null && prev.getKey() + partEntries < e.getKey())
                throw new CorruptionException("archive file part is missing", partPath(prev.getKey() + partEntries), 0);
            if (prev != null && prev.getValue().size() != HEADER + (e.getKey() - prev.getKey()) * ENTRY)
                throw new CorruptionException("archive file holds " + (prev.getValue().size() - HEADER) / ENTRY + " entries but the next part starts at "
                        + e.getKey(), prev.getValue().path(), 0);
            prev = e;
        }
    }

    private boolean entryValid(ByteBuffer b, int off) {
        crc.reset();
        crc.update(b.array(), b.arrayOffset() + off, 24);
        return b.getInt(off + 24) == (int) crc.getValue();
    }

    Path path() {
        return path;
    }

    /** True for checkpoint marks written before they had a kind of their own (no log counts, no end record). */
    boolean olderMarks() {
        return foundKind != kind;
    }

    /**
     * Recovery, before any cut: throws a {@link CorruptionException} naming the part and offset unless the log holds
     * its first {@code durable} entries (-1 when not known) and what follows may be a torn tail ({@link LogScan}).
     */
    synchronized void checkDurable(long durable) {
        long lastFirst = parts.lastKey();
        if (durable >= 0 && durable < lastFirst) return; // the full parts before hold it: the last part lies wholly past it
        if (partEntries != ONE_PART && count == lastFirst + partEntries && durable > count) {
            // the last part found is full and the mark needs more: the part after it was lost
            throw new CorruptionException("archive log part is missing: the recovered checkpoint mark made " + durable
                    + " entries durable but the parts end at " + count, partPath(count), 0);
        }
        if (tail != null) tail.checkDurable(durable < 0 ? durable : durable - lastFirst);
        else if (durable > count) throw new CorruptionException("archive file holds " + count + " entries but the recovered checkpoint mark made "
                + durable + " durable", partPath(lastFirst), HEADER + (count - lastFirst) * ENTRY);
    }

    /** Position after the last entry. */
    long count() {
        return count;
    }

    /** Position of the first entry still held (0 until a part was reclaimed). */
    synchronized long first() {
        return parts.firstKey();
    }

    /** Bytes on disk, reclaimed parts not counted. */
    synchronized long bytes() {
        return (count - parts.firstKey()) * ENTRY + (long) parts.size() * HEADER;
    }

    /** Bytes given back by {@link #reclaimBefore} since open. */
    synchronized long reclaimedBytes() {
        return reclaimedBytes;
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

    /** Writes the buffered entries into their parts, starting a new part whenever the last one is full. */
    private void writeBuffered() {
        if (unwritten.position() == 0) return;
        unwritten.flip();
        try {
            while (unwritten.hasRemaining()) {
                Map.Entry<Long, FileIO> last = parts.lastEntry();
                long room = partEntries - (written - last.getKey());
                if (room <= 0) {
                    parts.put(written, DurableFiles.create(io, partPath(written), header()));
                    continue;
                }
                int n = (int) Math.min(room, unwritten.remaining() / ENTRY);
                ByteBuffer run = unwritten.duplicate();
                run.limit(run.position() + n * ENTRY);
                last.getValue().write(run, HEADER + (written - last.getKey()) * ENTRY);
                dirty.add(last.getValue());
                unwritten.position(unwritten.position() + n * ENTRY);
                written += n;
            }
        } catch (IOException e) {
            throw new StorageException("archive append failed: " + e.getMessage(), path, e);
        } finally {
            unwritten.clear();
        }
        written = count;
    }

    /** Reads entries [from, from + n) into the arrays (any of which may be null), checking each CRC. */
    synchronized void read(long from, int n, long[] a, long[] b, long[] c) {
        if (from < parts.firstKey() && from >= 0)
            throw new CorruptionException("archive entry " + from + " is needed but its part was deleted", partPath(from / partEntries * partEntries), 0);
        if (from < parts.firstKey() || from + n > count)
            throw new IllegalArgumentException("entries [" + from + ", " + (from + n) + ") outside [" + parts.firstKey() + ", " + count + ") of " + path);
        int fromFile = (int) Math.max(0, Math.min(n, written - from));
        int done = 0;
        while (done < fromFile) {
            long at = from + done;
            Map.Entry<Long, FileIO> part = parts.floorEntry(at);
            Long next = parts.higherKey(at);
            int k = (int) Math.min(fromFile - done, next == null ? Long.MAX_VALUE : next - at);
            if (scratch.capacity() < k * ENTRY) scratch = ByteBuffer.allocate(k * ENTRY).order(ByteOrder.LITTLE_ENDIAN);
            scratch.clear().limit(k * ENTRY);
            long offset = HEADER + (at - part.getKey()) * ENTRY;
            try {
                if (part.getValue().read(scratch, offset) < k * ENTRY)
                    throw new CorruptionException("archive file shorter than its entry count", part.getValue().path(), offset);
            } catch (IOException e) {
                throw new StorageException("archive read failed: " + e.getMessage(), part.getValue().path(), e);
            }
            decode(scratch, 0, k, part, at, a, b, c, done);
            done += k;
        }
        if (fromFile < n) decode(unwritten, (int) (from + fromFile - written) * ENTRY, n - fromFile, null, from + fromFile, a, b, c, fromFile);
    }

    private ByteBuffer scratch = ByteBuffer.allocate(ENTRY * 256).order(ByteOrder.LITTLE_ENDIAN);

    private void decode(ByteBuffer buf, int start, int n, Map.Entry<Long, FileIO> part, long firstEntry, long[] a, long[] b, long[] c, int into) {
        CRC32C check = new CRC32C();
        for (int i = 0; i < n; i++) {
            int off = start + i * ENTRY;
            check.reset();
            check.update(buf.array(), off, 24);
            if (buf.getInt(off + 24) != (int) check.getValue())
                throw new CorruptionException("archive entry checksum mismatch", part == null ? path : part.getValue().path(),
                        part == null ? -1 : HEADER + (firstEntry + i - part.getKey()) * ENTRY);
            if (a != null) a[into + i] = buf.getLong(off);
            if (b != null) b[into + i] = buf.getLong(off + 8);
            if (c != null) c[into + i] = buf.getLong(off + 16);
        }
    }

    /** Writes buffered entries and fsyncs the parts written since the last fsync. */
    synchronized void force() {
        writeBuffered();
        try {
            for (FileIO f : dirty) f.force();
        } catch (IOException e) {
            throw new StorageException("archive fsync failed: " + e.getMessage(), path, e);
        }
        dirty.clear();
    }

    /**
     * Cuts the log to {@code n} entries (n at or after the first held entry), and any torn tail found at open after
     * them: recovery, once it has decided what is durable.
     */
    synchronized void truncate(long n) {
        if (n > count) return;
        if (n == count && (tail == null || !tail.hasTail())) {
            tail = null;
            return;
        }
        if (n < parts.firstKey()) throw new CorruptionException("archive entries before " + parts.firstKey() + " are needed but their part was deleted",
                partPath(n / partEntries * partEntries), 0);
        if (n == count && tail.hasTail()) LOG.warn("archive file {}: torn tail cut after {} entries", partPath(parts.lastKey()), n - parts.lastKey());
        tail = null;
        writeBuffered();
        try {
            while (parts.lastKey() > n) {
                FileIO f = parts.pollLastEntry().getValue();
                dirty.remove(f);
                f.close();
                io.delete(f.path());
            }
            Map.Entry<Long, FileIO> last = parts.lastEntry();
            last.getValue().truncate(HEADER + (n - last.getKey()) * ENTRY);
            last.getValue().force();
        } catch (IOException e) {
            throw new StorageException("cannot truncate archive file: " + e.getMessage(), path, e);
        }
        count = n;
        written = n;
    }

    /** Recovery of a log appended in mark order: the length of the longest prefix whose first fields {@code keep} accepts. */
    synchronized long prefix(java.util.function.LongPredicate keep) {
        long[] a = new long[BUFFERED_ENTRIES];
        long n = parts.firstKey();
        scan:
        while (n < count) {
            int k = (int) Math.min(a.length, count - n);
            read(n, k, a, null, null);
            for (int i = 0; i < k; i++, n++) if (!keep.test(a[i])) break scan;
        }
        return n;
    }

    /**
     * Deletes the parts that lie wholly before {@code position} — never the last one — and returns the first
     * position still held. Nothing before {@code position} may be read again.
     */
    synchronized long reclaimBefore(long position) {
        // the two newest parts always stay: losing any one file then leaves a part beside it that names the lost one
        // (a full last part the mark needs more than, or a first part after which a needed entry's part is gone)
        while (parts.size() > 2) {
            Map.Entry<Long, FileIO> firstPart = parts.firstEntry();
            long end = parts.higherKey(firstPart.getKey());
            if (end > position || end >= count) break; // the last entry stays readable: a restart reads it
            FileIO f = firstPart.getValue();
            try {
                f.close();
                io.delete(f.path());
            } catch (IOException e) {
                throw new StorageException("cannot delete a reclaimed archive file: " + e.getMessage(), f.path(), e);
            }
            dirty.remove(f);
            parts.pollFirstEntry();
            reclaimedBytes += HEADER + (end - firstPart.getKey()) * ENTRY;
        }
        return parts.firstKey();
    }

    @Override
    public synchronized void close() {
        // the parts are closed even when the last write fails (a full disk): no descriptor outlives the store
        try {
            writeBuffered();
        } finally {
            Closeables.closeAll(parts.values().toArray(new AutoCloseable[0]));
        }
    }
}
