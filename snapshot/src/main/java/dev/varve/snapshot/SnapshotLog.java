package dev.varve.snapshot;

import dev.varve.core.io.Closeables;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Durable declarations, Retro's Start(v): one record per snapshot, appended in id order, in the layout of
 * {@link SnapshotLogDescriptor}. Opening only reads and checks ({@link LogScan}); recovery decides what is
 * durable ({@link #checkDurable}) and only then cuts ({@link #truncate}).
 *
 * <p>A record's position counts every record the log was ever appended, as checkpoint marks do; the log holds those
 * from {@link #first} on. {@link #compact} rewrites it without the records that precede the first record of a
 * snapshot at or above a horizon, keeping of them only those of the snapshots still live (their declaration and
 * latest rank change, as retained records outside the positions): every other snapshot below the horizon was
 * dropped, so the file follows the live snapshots and the history since the latest checkpoint, wherever the
 * dropped ones lie — a snapshot kept for good keeps two records, not those of every snapshot declared after it.
 */
final class SnapshotLog implements AutoCloseable {
    private static final int RECORD = SnapshotLogDescriptor.RECORD_SIZE;
    private static final int MAX_UNWRITTEN = 1024;
    /** Records read at a time by {@link #load} and {@link #compact} (48 KiB). */
    private static final int CHUNK = 1024;

    private final FileIOFactory io;
    private final Path path;
    private FileIO file;
    /** The store's durable id, shared by the archive's files (0 until a marker holds it): what a rewrite records. */
    private final AtomicLong storeId;
    /** The log's format version. */
    private int version;
    /** Position of the first record held. */
    private long first;
    /**
     * The horizon below which records were compacted away, and when it was set: read under the archive's state lock,
     * written by a compaction under its append gate alone, so volatile (the time first, then the horizon).
     */
    private volatile long horizonMillis;
    private volatile long horizon;
    /**
     * The retained records, which precede {@link #first} and count no position, in the order they were appended; and
     * their ids, sorted (a lookup per drop log entry at compaction). Replaced whole by a compaction, so volatile.
     */
    private volatile List<SnapshotRecord> retained = List.of();
    private volatile long[] retainedIds = new long[0];
    /** The records as found at open; null once the log was cut or when it was created. */
    private LogScan scan;
    /** Records in the file, from {@link #first} on. */
    private long count;
    private boolean dirty;
    /** Records appended and not written yet, back to back as they go into the file: one write at {@link #force}. */
    private final ByteBuffer unwritten = ByteBuffer.allocate(RECORD * MAX_UNWRITTEN).order(ByteOrder.LITTLE_ENDIAN);

    /** A log that names no store and checks none (tests of the log alone). */
    SnapshotLog(FileIOFactory io, Path path, MaplogFile.Missing missing) {
        this(io, path, missing, new AtomicLong());
    }

    /**
     * The log of the store whose id {@code storeId} holds once a checkpoint marker does (0 until then): checked against
     * it at open; a log created now, or rewritten by a compaction later, records what it holds then.
     */
    SnapshotLog(FileIOFactory io, Path path, MaplogFile.Missing missing, AtomicLong storeId) {
        this.io = io;
        this.path = path;
        this.storeId = storeId;
        try {
            if (!io.exists(path)) {
                if (missing == MaplogFile.Missing.CORRUPT) throw new CorruptionException("the snapshot log is missing", path, 0);
                file = DurableFiles.create(io, path, SnapshotLogDescriptor.header(0, 0, 0, 0, storeId.get()));
                version = SnapshotLogDescriptor.VERSION;
            } else {
                file = io.open(path, false);
                try {
                    long retainedCount = readHeader();
                    scan = LogScan.of(file, SnapshotLogDescriptor.recordsFrom(version), RECORD, SnapshotLogDescriptor::intact);
                    // a compaction fsynced the retained records with the header that counts them: a bad one is damage
                    if (scan.valid < retainedCount)
                        throw new CorruptionException("the snapshot log's base block counts " + retainedCount + " retained records but only " + scan.valid
                                + " are intact", path, SnapshotLogDescriptor.recordsFrom(version) + scan.valid * RECORD);
                    readRetained((int) retainedCount);
                } catch (IOException | RuntimeException e) {
                    // nobody holds a log whose constructor failed: close its file here, or its descriptor stays open
                    Closeables.closeAfter(e, file);
                    throw e;
                }
                count = scan.valid - retained.size();
            }
        } catch (IOException e) {
            throw new StorageException("cannot open the snapshot log: " + e.getMessage(), path, e);
        }
    }

    /** Reads the header and base block; returns the number of retained records (none before version 3). */
    private long readHeader() throws IOException {
        int size = SnapshotLogDescriptor.HEADER_SIZE + SnapshotLogDescriptor.BASE_SIZE;
        ByteBuffer h = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        int read = file.read(h, 0);
        if (read < SnapshotLogDescriptor.HEADER_SIZE) throw new CorruptionException("snapshot log header truncated", path, 0);
        version = SnapshotLogDescriptor.checkHeader(h, path);
        if (version == 1) return 0; // no base block: position 0 first, nothing compacted
        if (read < size) throw new CorruptionException("snapshot log base block truncated", path, SnapshotLogDescriptor.HEADER_SIZE);
        int at = SnapshotLogDescriptor.HEADER_SIZE;
        SnapshotLogDescriptor.checkBase(h, at, path, version, storeId.get());
        first = h.getLong(at + SnapshotLogDescriptor.FIRST_OFFSET);
        horizon = h.getLong(at + SnapshotLogDescriptor.HORIZON_OFFSET);
        horizonMillis = h.getLong(at + SnapshotLogDescriptor.HORIZON_MILLIS_OFFSET);
        long retainedCount = version >= 3 ? h.getLong(at + SnapshotLogDescriptor.RETAINED_OFFSET) : 0;
        if (retainedCount < 0 || retainedCount > Integer.MAX_VALUE / RECORD)
            throw new CorruptionException("snapshot log base block counts " + retainedCount + " retained records", path,
                    SnapshotLogDescriptor.HEADER_SIZE + SnapshotLogDescriptor.RETAINED_OFFSET);
        return retainedCount;
    }

    /** Reads the {@code n} retained records that follow the base block (checked intact by the scan). */
    private void readRetained(int n) {
        List<SnapshotRecord> out = new ArrayList<>(n);
        ByteBuffer chunk = ByteBuffer.allocate(RECORD * CHUNK).order(ByteOrder.LITTLE_ENDIAN);
        for (int at = 0; at < n; at += CHUNK) {
            int m = Math.min(CHUNK, n - at);
            read(chunk, SnapshotLogDescriptor.recordsFrom(version) + (long) at * RECORD, m);
            for (int i = 0; i < m; i++) out.add(SnapshotLogDescriptor.decode(chunk, i * RECORD));
        }
        setRetained(out);
    }

    private void setRetained(List<SnapshotRecord> records) {
        long[] ids = records.stream().mapToLong(SnapshotRecord::id).sorted().distinct().toArray();
        retained = List.copyOf(records);
        retainedIds = ids;
    }

    Path path() {
        return path;
    }

    /** Byte offset of the record at {@code position} (at or after {@link #first}). */
    long offsetOf(long position) {
        return SnapshotLogDescriptor.recordOffset(version, first, retained.size(), position);
    }

    /** Position of the first record held. */
    long first() {
        return first;
    }

    /**
     * Every snapshot below this id was dropped unless it has a {@link #retained} record; the other records naming one
     * are skipped ({@link SnapshotLogDescriptor}).
     */
    long horizon() {
        return horizon;
    }

    /** When {@link #horizon} was set (epoch millis; 0 when never). */
    long horizonMillis() {
        return horizonMillis;
    }

    /** Records appended, written or not, counted from position 0: the position after the last. */
    long records() {
        return first + count + unwritten.position() / RECORD;
    }

    /**
     * The declarations and latest rank changes of the snapshots below {@link #horizon} that were live at the latest
     * compaction, in the order they were appended; they precede {@link #first} and count no position.
     */
    List<SnapshotRecord> retained() {
        return retained;
    }

    /** Whether {@code id} has a {@link #retained} record (read without a lock: the set is replaced whole). */
    boolean retains(long id) {
        return java.util.Arrays.binarySearch(retainedIds, id) >= 0;
    }

    /** The valid records held as found at open, from {@link #first} on, without changing the file. */
    List<SnapshotRecord> load() {
        List<SnapshotRecord> out = new ArrayList<>();
        ByteBuffer chunk = ByteBuffer.allocate(RECORD * CHUNK).order(ByteOrder.LITTLE_ENDIAN);
        for (long at = first; at < first + count; at += CHUNK) {
            int n = (int) Math.min(CHUNK, first + count - at);
            readRecords(chunk, at, n);
            for (int i = 0; i < n; i++) out.add(SnapshotLogDescriptor.decode(chunk, i * RECORD));
        }
        return out;
    }

    /** Reads the {@code n} records from position {@code at} into {@code chunk}, each checked against its CRC. */
    private void readRecords(ByteBuffer chunk, long at, int n) {
        read(chunk, offsetOf(at), n);
    }

    /** Reads the {@code n} records at byte {@code offset} into {@code chunk}, each checked against its CRC. */
    private void read(ByteBuffer chunk, long offset, int n) {
        chunk.clear().limit(n * RECORD);
        try {
            if (file.read(chunk, offset) < n * RECORD) throw new CorruptionException("snapshot log shorter than its records", path, offset);
        } catch (IOException e) {
            throw new StorageException("cannot read the snapshot log: " + e.getMessage(), path, e);
        }
        for (int i = 0; i < n; i++)
            if (!SnapshotLogDescriptor.intact(chunk, i * RECORD)) throw new CorruptionException("snapshot log record CRC32C mismatch", path, offset + (long) i * RECORD);
    }

    /** See {@link LogScan#checkDurable}: throws unless the first {@code durable} records are intact (-1: not known). */
    void checkDurable(long durable) {
        if (durable >= 0 && durable < first)
            throw new CorruptionException("the recovered checkpoint mark made " + durable + " snapshot log records durable but the log was compacted to begin at "
                    + first, path, SnapshotLogDescriptor.HEADER_SIZE);
        if (scan != null) scan.checkDurable(durable < 0 ? durable : durable - first + retained.size());
    }

    /**
     * Appends a record, buffered: declarations need only be durable by the checkpoint whose mark follows them
     * (replay re-declares the others from their snaprecs), so they are written and fsynced at {@link #force}.
     */
    void append(SnapshotRecord s) {
        if (!unwritten.hasRemaining()) writeBuffered(); // bounded heap however fast snapshots are declared
        unwritten.put(SnapshotLogDescriptor.record(s));
    }

    private void writeBuffered() {
        if (unwritten.position() == 0) return;
        unwritten.flip();
        try {
            file.write(unwritten, offsetOf(first + count));
            count += unwritten.limit() / RECORD;
            dirty = true;
        } catch (IOException e) {
            throw new StorageException("snapshot log append failed: " + e.getMessage(), path, e);
        } finally {
            unwritten.clear();
        }
    }

    /** Keeps the records before position {@code n}, cutting whatever follows them (recovery, before any append). */
    void truncate(long n) {
        if (n > first + count || n < first)
            throw new IllegalArgumentException("cannot keep " + n + " snapshot log records of [" + first + ", " + (first + count) + ")");
        unwritten.clear();
        scan = null;
        try {
            Path temp = DurableFiles.tempOf(path);
            if (io.exists(temp)) io.delete(temp); // a compaction cut short before its rename: the log itself is whole
            if (file.size() > offsetOf(n)) {
                file.truncate(offsetOf(n));
                file.force();
            }
        } catch (IOException e) {
            throw new StorageException("cannot truncate the snapshot log: " + e.getMessage(), path, e);
        }
        count = n - first;
    }

    /**
     * Rewrites the log without its records before the first one that names a snapshot at or above {@code newHorizon},
     * recording the horizon (set at {@code millis}) so that open skips the records below it that remain — except the
     * declaration and latest rank change of each snapshot {@code live} (sorted ids) names, kept as retained records.
     * The caller guarantees that every other snapshot below the horizon was dropped and its drop is durable, and that
     * no recovery can need the records it removes. The new file replaces the old in one rename: a crash leaves one or
     * the other, whole.
     */
    void compact(long newHorizon, long millis, long[] live) {
        writeBuffered();
        long end = first + count;
        long cut = firstAtOrAbove(newHorizon, end);
        if (cut == first) return;
        List<SnapshotRecord> kept = liveBefore(cut, live);
        if (kept == null) return; // the rewrite would let nothing go
        ByteBuffer header = SnapshotLogDescriptor.header(cut, newHorizon, millis, kept.size(), storeId.get());
        long tailFrom = SnapshotLogDescriptor.recordOffset(SnapshotLogDescriptor.VERSION, cut, kept.size(), cut);
        FileIO compacted;
        try {
            compacted = DurableFiles.replace(io, path, t -> {
                t.write(header.duplicate(), 0);
                ByteBuffer records = ByteBuffer.allocate(kept.size() * RECORD).order(ByteOrder.LITTLE_ENDIAN);
                for (SnapshotRecord r : kept) records.put(SnapshotLogDescriptor.record(r));
                t.write(records.flip(), SnapshotLogDescriptor.recordsFrom(SnapshotLogDescriptor.VERSION));
                ByteBuffer chunk = ByteBuffer.allocate(RECORD * CHUNK).order(ByteOrder.LITTLE_ENDIAN);
                for (long at = cut; at < end; at += CHUNK) {
                    int n = (int) Math.min(CHUNK, end - at);
                    readRecords(chunk, at, n);
                    t.write(chunk.flip(), tailFrom + (at - cut) * RECORD);
                }
            });
        } catch (IOException e) {
            throw new StorageException("cannot compact the snapshot log: " + e.getMessage(), path, e);
        }
        Closeables.closeAll(file);
        file = compacted;
        version = SnapshotLogDescriptor.VERSION;
        setRetained(kept); // before first moves: offsetOf reads both, and only this thread does while the gate is held
        first = cut;
        count = end - cut;
        horizonMillis = millis;
        horizon = newHorizon;
        dirty = false; // the new file was fsynced whole
    }

    /**
     * Of the retained records and those before position {@code cut}, the first (the declaration) and the last (the
     * latest rank) of each snapshot {@code live} names, the firsts in id order (the order they were declared in), then
     * the lasts: what a compaction cutting there keeps, bounded by the live snapshots however many records the span
     * held. Null when that is every one of them (nothing dropped, no rank change to fold: a store that keeps all).
     */
    private List<SnapshotRecord> liveBefore(long cut, long[] live) {
        SnapshotRecord[] firsts = new SnapshotRecord[live.length];
        SnapshotRecord[] lasts = new SnapshotRecord[live.length];
        java.util.function.Consumer<SnapshotRecord> note = r -> {
            int at = java.util.Arrays.binarySearch(live, r.id());
            if (at < 0) return;
            if (firsts[at] == null) firsts[at] = r;
            else lasts[at] = r;
        };
        retained.forEach(note);
        ByteBuffer chunk = ByteBuffer.allocate(RECORD * CHUNK).order(ByteOrder.LITTLE_ENDIAN);
        for (long at = first; at < cut; at += CHUNK) {
            int n = (int) Math.min(CHUNK, cut - at);
            readRecords(chunk, at, n);
            for (int i = 0; i < n; i++) note.accept(SnapshotLogDescriptor.decode(chunk, i * RECORD));
        }
        List<SnapshotRecord> out = new ArrayList<>();
        for (SnapshotRecord r : firsts) if (r != null) out.add(r);
        for (SnapshotRecord r : lasts) if (r != null) out.add(r);
        return out.size() == retained.size() + (cut - first) ? null : out;
    }

    /** Position of the first record held that names a snapshot at or above {@code id}; {@code end} when none does. */
    private long firstAtOrAbove(long id, long end) {
        ByteBuffer chunk = ByteBuffer.allocate(RECORD * CHUNK).order(ByteOrder.LITTLE_ENDIAN);
        for (long at = first; at < end; at += CHUNK) {
            int n = (int) Math.min(CHUNK, end - at);
            readRecords(chunk, at, n);
            for (int i = 0; i < n; i++) if (chunk.getLong(i * RECORD + SnapshotLogDescriptor.ID_OFFSET) >= id) return at + i;
        }
        return end;
    }

    void force() {
        writeBuffered();
        if (!dirty) return;
        try {
            file.force();
        } catch (IOException e) {
            throw new StorageException("snapshot log fsync failed: " + e.getMessage(), path, e);
        }
        dirty = false;
    }

    @Override
    public void close() {
        try {
            writeBuffered();
        } finally {
            Closeables.closeAll(file);
        }
    }
}
