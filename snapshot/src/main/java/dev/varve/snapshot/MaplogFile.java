package dev.varve.snapshot;

import dev.varve.core.io.Closeables;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.util.StoreThreads;
import dev.varve.snapshot.MaplogDescriptor.Kind;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;

/**
 * An append-only log of fixed 32-byte entries of three longs, each with a CRC32C, in the layout of
 * {@link MaplogDescriptor}; what the fields mean is the log's {@link Kind}: a Maplog or Skippy level, a Skippy
 * uplink index, the drop log, the lazy-ranking moves, the rank changes or the checkpoint marks.
 *
 * <p>An entry's position is its global index. The entries live in part files of {@code partEntries} entries each, so
 * that the Maplog's portions no snapshot reads any more go whole ({@link #reclaimBefore}), like Pagelog segments.
 * Logs that are never reclaimed use one part. Opening only reads: the last part's entries are checked
 * ({@link LogScan}), and what follows the first bad one is cut by {@link #truncate} once recovery has decided that it
 * lies past what the recovered checkpoint mark made durable ({@link #checkDurable}). A missing log is created only
 * for a new archive.
 *
 * <p>A log of one part is rewritten instead ({@link #compactBefore}, {@link #replaceWith}): the new part is written
 * whole under a temp name and renamed into place under the name of its first position, and only then the old part
 * goes. A crash between the two leaves the new part beside the one it replaces; open reads the newest part alone and
 * recovery deletes the older ({@link #superseded}). Which parts open reads is {@link MaplogParts}'s to decide.
 */
final class MaplogFile implements AutoCloseable {
    /** A part's header and an entry, in bytes: short names for the descriptor's sizes. */
    private static final int HEADER = MaplogDescriptor.HEADER_SIZE;
    private static final int ENTRY = MaplogDescriptor.ENTRY_SIZE;
    /** Part size of logs that are never reclaimed: one part. */
    static final long ONE_PART = Long.MAX_VALUE;
    private static final Logger LOG = LoggerFactory.getLogger(MaplogFile.class);
    /** Whether a missing log may be created (a new archive) or is corruption. */
    enum Missing { CREATE, CORRUPT }

    private static final int BUFFERED_ENTRIES = 2048;
    private final FileIOFactory io;
    private final Path path;
    private final Kind kind;
    private final int level;
    private final int nodeEntries;
    private final long partEntries;
    /** Position of each part's first entry → the part; the last one and those written since the last force are open. */
    private final TreeMap<Long, PartFile> parts;
    /** Parts before the last one that may stay open once read. */
    private final DescriptorBudget budget = new DescriptorBudget(4);
    /**
     * Entries appended but not written yet: they are written in one go when it fills, at {@link #force}, on truncate,
     * or when {@link #makeRoom} is asked for more than is left. A Skippy level above the Maplog has room for a node more
     * than {@value #BUFFERED_ENTRIES}: a promotion of a whole node then fits after {@link #makeRoom}.
     */
    private final MaplogBuffer unwritten;
    /** Where new parts come from: each created ahead of need, while the one before it fills. */
    private final NextPart next;
    private final CRC32C crc = new CRC32C();
    /** The store's durable id, shared by the archive's files (0 until a marker holds it): what new parts record. */
    private final AtomicLong storeId;
    private volatile long count;
    /** Entries in the files; [written, count) are in {@link #unwritten}. */
    private long written;
    /** Parts written since the last fsync. */
    private final java.util.Set<PartFile> dirty = new java.util.HashSet<>();
    private long reclaimedBytes;
    /** True when the header holds checkpoint marks of an older archive (stored as uplinks). */
    private final boolean legacyMarks;
    /** The last part's entries as found at open; null once its tail was cut or when the log was created. */
    private LogScan tail;
    /**
     * Parts found after a part left short (a power loss lost its unforced entries while the next part's creation was
     * durable, or a crash left a part created ahead of need): they hold nothing any checkpoint mark made durable
     * ({@link #checkDurable} says so), and the recovery cut deletes them ({@link #truncate}); until then they are set
     * aside, never read.
     */
    private final java.util.List<Path> pastShortPart;
    /** Parts of a one-part log found beside a newer part a rewrite wrote whole: never read, deleted by {@link #truncate}. */
    private final java.util.List<Path> superseded;

    /** A log that names no store and checks none (tests of the log alone). */
    MaplogFile(FileIOFactory io, Path path, Kind kind, int level, int nodeEntries, Missing missing) {
        this(io, path, kind, level, nodeEntries, ONE_PART, missing);
    }

    /** A log of parts of {@code partEntries} entries that names no store and checks none (tests of the log alone). */
    MaplogFile(FileIOFactory io, Path path, Kind kind, int level, int nodeEntries, long partEntries, Missing missing) {
        this(io, path, kind, level, nodeEntries, partEntries, missing, new AtomicLong());
    }

    /**
     * A log of the store whose id {@code storeId} holds once a checkpoint marker does (0 until then): its parts are
     * checked against it at open, and parts created or rewritten later record what it holds then.
     */
    MaplogFile(FileIOFactory io, Path path, Kind kind, int level, int nodeEntries, long partEntries, Missing missing, AtomicLong storeId) {
        this.io = io;
        this.storeId = storeId;
        this.path = path;
        this.kind = kind;
        this.level = level;
        this.nodeEntries = nodeEntries;
        this.partEntries = partEntries;
        int promoted = kind == Kind.MAPPINGS && level > 0 ? nodeEntries : 0;
        this.unwritten = new MaplogBuffer(BUFFERED_ENTRIES + promoted);
        this.next = new NextPart(io, budget, "varve-maplog-parts" + StoreThreads.suffix());
        MaplogParts found = MaplogParts.open(io, path, kind, level, nodeEntries, partEntries, budget, storeId.get());
        this.parts = found.parts;
        this.pastShortPart = found.pastShortPart;
        this.superseded = found.superseded;
        this.legacyMarks = found.legacyMarks;
        try {
            if (parts.isEmpty()) {
                if (missing == Missing.CORRUPT) throw new CorruptionException("archive file is missing", path, 0);
                parts.put(0L, PartFile.created(io, DurableFiles.create(io, path, header()), budget));
                count = 0;
            } else {
                Map.Entry<Long, PartFile> last = parts.lastEntry();
                tail = LogScan.of(last.getValue(), HEADER, ENTRY, this::entryValid);
                count = last.getKey() + tail.valid;
            }
            parts.lastEntry().getValue().keepOpen(true); // appended to
            written = count;
        } catch (IOException | RuntimeException e) {
            Closing.closeAll(e, parts.values());
            if (e instanceof RuntimeException r) throw r;
            throw new StorageException("cannot open archive file: " + e.getMessage(), path, e);
        }
    }

    private Path partPath(long first) {
        return MaplogParts.partPath(path, first);
    }

    private ByteBuffer header() {
        return MaplogDescriptor.header(kind, level, nodeEntries, storeId.get());
    }

    private boolean entryValid(ByteBuffer b, int off) {
        return b.getInt(off + MaplogDescriptor.ENTRY_CRC_OFFSET) == MaplogDescriptor.entryCrc(b, off, crc);
    }

    Path path() {
        return path;
    }

    /** True for checkpoint marks written before they had a kind of their own (no log counts, no end record). */
    boolean olderMarks() {
        return legacyMarks;
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
                + durable + " durable", partPath(lastFirst), MaplogDescriptor.entryOffset(count - lastFirst));
    }

    /** The file of the part that holds position {@code position} (at or after {@link #first}). */
    synchronized Path pathOf(long position) {
        Long first = parts.floorKey(position);
        return partPath(first == null ? parts.firstKey() : first);
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

    /** See {@link MaplogBuffer.WriteGate}. */
    synchronized void gate(MaplogBuffer.WriteGate g) {
        unwritten.gate(g);
    }

    /** Appends an entry (single writer: the archiver, or recovery before any view exists). */
    synchronized void append(long a, long b, long c) {
        if (unwritten.mustWrite()) writeBuffered();
        unwritten.put(a, b, c, crc);
        count++;
    }

    /**
     * Writes the buffered entries now unless {@code entries} more fit the buffer. The archiver calls it holding none
     * of the archive's locks (it changes no count, only where entries are kept), so the appends it then makes under
     * them stay in memory: a write, or the fsync that creates a new part, never holds up a capture or a declaration.
     */
    synchronized void makeRoom(int entries) {
        if (!unwritten.fits(entries)) writeBuffered();
    }

    /** Bytes the write buffer holds room for: see {@link MaplogBuffer#written}. */
    synchronized int bufferCapacity() {
        return unwritten.capacity();
    }

    /** Writes the buffered entries into their parts, starting a new part whenever the last one is full. */
    private void writeBuffered() {
        if (unwritten.isEmpty()) return;
        ByteBuffer buffered = unwritten.toWrite();
        try {
            while (buffered.hasRemaining()) {
                Map.Entry<Long, PartFile> last = parts.lastEntry();
                long room = partEntries - (written - last.getKey());
                if (room <= 0) {
                    newLastPart(written, next.start(partPath(written), header(), partPath(written + partEntries)));
                    continue;
                }
                int n = (int) Math.min(room, buffered.remaining() / ENTRY);
                ByteBuffer run = buffered.duplicate();
                run.limit(run.position() + n * ENTRY);
                last.getValue().write(run, MaplogDescriptor.entryOffset(written - last.getKey()));
                dirty.add(last.getValue());
                buffered.position(buffered.position() + n * ENTRY);
                written += n;
            }
        } catch (IOException e) {
            throw new StorageException("archive append failed: " + e.getMessage(), path, e);
        } finally {
            unwritten.written();
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
            Map.Entry<Long, PartFile> part = parts.floorEntry(at);
            Long next = parts.higherKey(at);
            int k = (int) Math.min(fromFile - done, next == null ? Long.MAX_VALUE : next - at);
            if (scratch.capacity() < k * ENTRY) scratch = ByteBuffer.allocate(k * ENTRY).order(ByteOrder.LITTLE_ENDIAN);
            scratch.clear().limit(k * ENTRY);
            long offset = MaplogDescriptor.entryOffset(at - part.getKey());
            try {
                if (part.getValue().read(scratch, offset) < k * ENTRY)
                    throw new CorruptionException("archive file shorter than its entry count", part.getValue().path(), offset);
            } catch (IOException e) {
                throw new StorageException("archive read failed: " + e.getMessage(), part.getValue().path(), e);
            }
            decode(scratch, 0, k, part, at, a, b, c, done);
            done += k;
        }
        if (fromFile < n) decode(unwritten.entries(), (int) (from + fromFile - written) * ENTRY, n - fromFile, null, from + fromFile, a, b, c, fromFile);
    }

    private ByteBuffer scratch = ByteBuffer.allocate(ENTRY * 256).order(ByteOrder.LITTLE_ENDIAN);

    private void decode(ByteBuffer buf, int start, int n, Map.Entry<Long, PartFile> part, long firstEntry, long[] a, long[] b, long[] c, int into) {
        CRC32C check = new CRC32C();
        for (int i = 0; i < n; i++) {
            int off = start + i * ENTRY;
            if (buf.getInt(off + MaplogDescriptor.ENTRY_CRC_OFFSET) != MaplogDescriptor.entryCrc(buf, off, check))
                throw new CorruptionException("archive entry checksum mismatch", part == null ? path : part.getValue().path(),
                        part == null ? -1 : MaplogDescriptor.entryOffset(firstEntry + i - part.getKey()));
            if (a != null) a[into + i] = buf.getLong(off + MaplogDescriptor.A_OFFSET);
            if (b != null) b[into + i] = buf.getLong(off + MaplogDescriptor.B_OFFSET);
            if (c != null) c[into + i] = buf.getLong(off + MaplogDescriptor.C_OFFSET);
        }
    }

    /**
     * Fsyncs the parts written since the last fsync without holding this log's monitor, so the archiver's appends go
     * on meanwhile: the checkpoint's flush calls it before it takes the archive's append gate, and {@link #force}
     * under the gate is left with what was written since. The buffered entries stay buffered (writing them may start
     * a part, with fsyncs, which is the archiver's to do outside the archive's locks). Parts are closed only by the
     * checkpoint's own thread (reclamation, compaction), by recovery and by close after the last checkpoint, so none
     * goes while this forces it.
     */
    void forceWritten() {
        List<PartFile> written;
        synchronized (this) {
            written = List.copyOf(dirty);
        }
        for (PartFile f : written) {
            try {
                f.force();
            } catch (IOException e) {
                throw new StorageException("archive fsync failed: " + e.getMessage(), f.path(), e);
            }
        }
    }

    /** Writes buffered entries and fsyncs the parts written since the last fsync; those before the last one let go. */
    synchronized void force() {
        writeBuffered();
        try {
            for (PartFile f : dirty) f.force();
            budget.trim();
        } catch (IOException e) {
            throw new StorageException("archive fsync failed: " + e.getMessage(), path, e);
        }
        dirty.clear();
    }

    /** Appends go to the part at {@code first}, just created: the one before may let its descriptor go once forced. */
    private void newLastPart(long first, PartFile part) {
        parts.lastEntry().getValue().keepOpen(false);
        part.keepOpen(true);
        parts.put(first, part);
    }

    /**
     * Cuts the log to {@code n} entries (n at or after the first held entry), and any torn tail found at open after
     * them: recovery, once it has decided what is durable.
     */
    synchronized void truncate(long n) {
        MaplogParts.deleteSetAside(io, pastShortPart, "a part past one left short (by a power loss, or created ahead of need and not used)");
        MaplogParts.deleteSetAside(io, superseded, "a part a rewrite replaced");
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
                PartFile f = parts.pollLastEntry().getValue();
                dirty.remove(f);
                f.close();
                io.deleteDurably(f.path()); // the newest first, each before the next: no gap, even after a power cut
            }
            Map.Entry<Long, PartFile> last = parts.lastEntry();
            last.getValue().keepOpen(true);
            last.getValue().truncate(MaplogDescriptor.entryOffset(n - last.getKey()));
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
     * Reads the up to {@code max} entries before position {@code to} that the log still holds into the arrays (any of
     * which may be null), the last at index n - 1, and returns n: 0 once {@code to} is at the first entry held. For
     * readers that go back through a log a rewrite may shorten meanwhile ({@link #compactBefore}).
     */
    synchronized int readBefore(long to, int max, long[] a, long[] b, long[] c) {
        long from = Math.max(parts.firstKey(), to - max);
        if (from >= to) return 0;
        read(from, (int) (to - from), a, b, c);
        return (int) (to - from);
    }

    /**
     * Log of one part: rewrites it without the entries before {@code position} (see the class), which must not be read
     * again; no recovery may need them either.
     */
    synchronized void compactBefore(long position) {
        if (position <= parts.firstKey()) return;
        if (position > count) throw new IllegalArgumentException("cannot compact " + path + " before " + position + ": it ends at " + count);
        writeBuffered();
        rewrite(position, count - position, (from, n, a, b, c) -> read(position + from, n, a, b, c));
    }

    /** Log of one part: replaces it by one holding {@code entries} ({a, b, c} each) from position {@code first} on. */
    synchronized void replaceWith(long first, java.util.List<long[]> entries) {
        writeBuffered();
        rewrite(first, entries.size(), (from, n, a, b, c) -> {
            for (int i = 0; i < n; i++) {
                long[] e = entries.get((int) from + i);
                a[i] = e[0];
                b[i] = e[1];
                c[i] = e[2];
            }
        });
    }

    private void rewrite(long newFirst, long n, MaplogPartWriter.EntrySource source) {
        if (partEntries != ONE_PART) throw new IllegalStateException(path + " has parts: it is reclaimed by whole parts, not rewritten");
        Path newPath = partPath(newFirst);
        PartFile rewritten = PartFile.created(io, MaplogPartWriter.write(io, newPath, header(), n, source), budget);
        rewritten.keepOpen(true);
        MaplogParts.deleteSetAside(io, superseded, "a part an earlier rewrite replaced");
        try {
            for (PartFile old : parts.values()) {
                old.close();
                if (!old.path().equals(newPath)) io.deleteDurably(old.path()); // only once the new part is there whole
            }
        } catch (IOException e) {
            throw new StorageException("cannot delete a rewritten archive file: " + e.getMessage(), path, e);
        } finally {
            parts.clear();
            parts.put(newFirst, rewritten);
            dirty.clear();
            tail = null;
            count = newFirst + n;
            written = count;
        }
    }

    /**
     * Deletes the parts that lie wholly before {@code position} — never the last one — and returns the first
     * position still held. Nothing before {@code position} may be read again.
     */
    synchronized long reclaimBefore(long position) {
        // the two newest parts always stay: losing any one file then leaves a part beside it that names the lost one
        // (a full last part the mark needs more than, or a first part after which a needed entry's part is gone)
        while (parts.size() > 2) {
            Map.Entry<Long, PartFile> firstPart = parts.firstEntry();
            long end = parts.higherKey(firstPart.getKey());
            if (end > position || end >= count) break; // the last entry stays readable: a restart reads it
            PartFile f = firstPart.getValue();
            try {
                f.close();
                io.deleteDurably(f.path()); // before the next one goes: a power cut must not leave a gap, which open refuses
            } catch (IOException e) {
                throw new StorageException("cannot delete a reclaimed archive file: " + e.getMessage(), f.path(), e);
            }
            dirty.remove(f);
            parts.pollFirstEntry();
            reclaimedBytes += MaplogDescriptor.entryOffset(end - firstPart.getKey());
        }
        return parts.firstKey();
    }

    @Override
    public synchronized void close() {
        // the parts are closed even when the last write fails (a full disk): no descriptor outlives the store
        try {
            writeBuffered();
        } finally {
            try {
                Closeables.closeAll(parts.values().toArray(new AutoCloseable[0]));
            } finally {
                next.close(); // a part created ahead and not used is deleted
            }
        }
    }
}
