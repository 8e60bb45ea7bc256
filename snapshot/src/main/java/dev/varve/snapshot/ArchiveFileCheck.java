package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DamageSink;
import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.function.BiFunction;
import java.util.function.IntUnaryOperator;
import java.util.regex.Pattern;
import java.util.function.ToLongFunction;
import java.util.zip.CRC32C;

/**
 * Offline check of the snapshot archive's files (operator tools): the header and every record's CRC32C of each
 * Pagelog segment, each Maplog-format log (Maplog and Skippy levels and their portions, uplinks, drops, joins,
 * moves, checkpoint marks) and the snapshot log, reported to a {@link DamageSink}. Given what a recovery (run in memory
 * by a read-only open) keeps of each file, the bytes it cuts — records past the checkpoint mark, which a crash may
 * have torn and replay writes again — are told as that ({@link CutSink}), not as damage: open does not read them.
 * Given the store's id, a Pagelog segment, log part or snapshot log that names another store is damage too. Ranked
 * extents are checked (their store too) when the archive opens them. Reads only.
 */
public final class ArchiveFileCheck {
    /** Name prefixes of a rank level's Skippy files: the level's Maplogs, and the uplinks between them. */
    private static final String MAPLOG = "maplog-L";
    private static final String UPLINKS = "skippy-uplinks-L";

    /**
     * The names the archive gives its logs: {@code <name>.log}, or a portion {@code <name>.log.<first position>}, of
     * letters, digits and dashes ({@code maplog-L0.log}) without a leading dot. What else the directory holds is not
     * the archive's and is neither read nor judged: an editor's {@code .maplog-L0.log.swp} or {@code snapshots.log~},
     * a README, lost+found of the disk the archive was given.
     */
    private static final Pattern LOG_NAME = Pattern.compile("[a-zA-Z][a-zA-Z0-9-]*\\.log(\\.\\d+)?");

    /** Keeps every byte of every file: the check of an archive no recovery was run on. */
    public static final ToLongFunction<Path> KEEP_ALL = p -> Long.MAX_VALUE;

    /** Receives each tail recovery cuts: the file, the first byte cut, the bytes cut (the whole file when it deletes it). */
    @FunctionalInterface
    public interface CutSink {
        void cut(Path file, long from, long bytes);
    }

    private ArchiveFileCheck() {
    }

    /** Whether {@code name} is one the archive gives a log, a Pagelog segment or a ranked extent ({@link #LOG_NAME}). */
    static boolean isArchiveFile(String name) {
        return LOG_NAME.matcher(name).matches() || RankedExtentDescriptor.snapshotOf(name) >= 0;
    }

    /** Rank levels present in {@code archiveDir} ({@code level-1} .. {@code level-k}); 0 when there is no archive. */
    public static int levels(FileIOFactory io, Path archiveDir) {
        int k = 0;
        while (io.exists(archiveDir.resolve("level-" + (k + 1)))) k++;
        return k;
    }

    /** The skippyNodeEntries a level's Maplog was written with, or -1 when there is none. */
    public static int nodeEntries(FileIOFactory io, Path archiveDir) throws IOException {
        // the first part: the Maplog's file, or its oldest portion once reclamation deleted that
        Path maplog = io.exists(archiveDir.resolve("level-1")) ? MaplogParts.firstPart(io, archiveDir.resolve("level-1").resolve("maplog-L0.log")) : null;
        if (maplog == null) return -1;
        try (FileIO f = io.open(maplog, false)) {
            ByteBuffer h = ByteBuffer.allocate(MaplogDescriptor.HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
            f.read(h, 0);
            return h.getLong(MaplogDescriptor.MAGIC_OFFSET) == MaplogDescriptor.MAGIC ? h.getInt(MaplogDescriptor.NODE_ENTRIES_OFFSET) : -1;
        }
    }

    /**
     * Skippy levels above a level's Maplog: the highest {@code i} of a {@code maplog-L<i>.log}, or of
     * {@code skippy-uplinks-L<i-1>.log} (the uplinks into level i), or of a portion of one, in any rank level. Every
     * rank level has every one of these logs, so the highest found anywhere says how many there are: counting one
     * level's files up to the first gap would take a deleted file for a store with fewer levels, and the check would
     * then pass a store that open refuses for the missing file.
     */
    public static int skippyLevels(FileIOFactory io, Path archiveDir) throws IOException {
        int highest = 0;
        for (int j = 1, k = levels(io, archiveDir); j <= k; j++) {
            for (Path p : io.list(archiveDir.resolve("level-" + j), "")) {
                String n = p.getFileName().toString();
                if (n.startsWith(MAPLOG)) highest = Math.max(highest, levelOf(n, MAPLOG));
                else if (n.startsWith(UPLINKS)) highest = Math.max(highest, levelOf(n, UPLINKS) + 1);
            }
        }
        return highest;
    }

    /**
     * The level {@code prefix<i>.log} or its portion {@code prefix<i>.log.<first>} names; -1 for any other name under
     * the prefix (a temporary file). Portions count: once reclamation has deleted a log's first part, only they are left.
     */
    private static int levelOf(String name, String prefix) {
        int log = name.indexOf(".log", prefix.length());
        if (log < 0) return -1;
        String part = name.substring(log + ".log".length());
        if (!part.isEmpty() && !part.matches("\\.\\d+")) return -1;
        try {
            return Integer.parseInt(name.substring(prefix.length(), log));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * The archiveSegmentSize that maps a level's Pagelog addresses as they were written: the one its segment headers
     * record; for an archive written before they recorded it, one that holds as many records as the largest segment
     * that is not its level's last (every such segment is full, unless damaged: a truncated one must not shrink the
     * size that reads the others), else {@code fallback} (any size at least that of each level's one segment reads
     * it, unless that segment is not the level's first).
     */
    public static long segmentBytes(FileIOFactory io, Path archiveDir, int pageSize, long fallback) throws IOException {
        long full = 0;
        long best = fallback;
        for (int j = 1, k = levels(io, archiveDir); j <= k; j++) {
            java.util.List<Path> segs = io.list(archiveDir.resolve("level-" + j), PagelogDescriptor.FILE_PREFIX);
            for (int i = 0; i < segs.size(); i++) {
                try (FileIO f = io.open(segs.get(i), false)) {
                    ByteBuffer header = ByteBuffer.allocate(PagelogDescriptor.HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
                    f.read(header, 0);
                    int recorded = PagelogDescriptor.recordedRecordsPerSegment(header.clear());
                    if (recorded > 0) return PagelogDescriptor.largestSegmentBytes(recorded, pageSize); // a damaged header's is 0
                    if (i < segs.size() - 1) full = Math.max(full, f.size());
                    else best = Math.max(best, f.size());
                }
            }
        }
        // the configured size is rounded down to whole records
        return full > 0 ? full + PagelogDescriptor.recordBytes(pageSize) - 1 : best;
    }

    /** Checks every byte of every archive file; returns the records checked. */
    public static long check(FileIOFactory io, Path archiveDir, int pageSize, DamageSink sink) throws IOException {
        return check(io, archiveDir, pageSize, KEEP_ALL, sink, (file, from, bytes) -> {
        });
    }

    /**
     * Checks what recovery keeps of every archive file — its first {@code keptByRecovery(file)} bytes, none when that
     * is negative (recovery deletes it) — and passes the rest to {@code cuts}; returns the records checked.
     */
    public static long check(FileIOFactory io, Path archiveDir, int pageSize, ToLongFunction<Path> keptByRecovery, DamageSink sink, CutSink cuts)
            throws IOException {
        return check(io, archiveDir, pageSize, keptByRecovery, 0, sink, cuts);
    }

    /**
     * {@link #check(FileIOFactory, Path, int, ToLongFunction, DamageSink, CutSink)} of the archive of the store whose
     * durable id is {@code storeId} (0: none yet): a Pagelog segment or a Maplog-format log part that names another
     * store is damage, as open refuses it.
     */
    public static long check(FileIOFactory io, Path archiveDir, int pageSize, ToLongFunction<Path> keptByRecovery, long storeId, DamageSink sink,
                             CutSink cuts) throws IOException {
        Checker checker = new Checker(io, pageSize, keptByRecovery, storeId, sink, cuts);
        long records = 0;
        for (Path p : io.list(archiveDir, "")) records += checker.checkFile(p);
        for (int j = 1, k = levels(io, archiveDir); j <= k; j++) {
            for (Path p : io.list(archiveDir.resolve("level-" + j), "")) records += checker.checkFile(p);
        }
        return records;
    }

    /**
     * What the check needs of one fixed-record format: a header starting with its magic, with a version and a CRC32C at
     * {@code headerCrcAt} over the bytes before it, then records of {@code recordBytes} whose CRC32C at {@code crcAt}
     * covers [0, {@code crcAt}) and [{@code bodyFrom}, end) — {@code bodyFrom} = {@code recordBytes} when the CRC
     * covers only the bytes before it. The first {@code blocksBefore} of them (by version) are blocks of the header laid
     * out like records (the snapshot log's base block), not records: records are numbered from 0 after them, as the
     * store's open numbers them, so that verify and open name the same damage alike.
     */
    private record Layout(long magic, int versionAt, int minVersion, int version, int headerBytes, int headerCrcAt, int recordBytes, int crcAt,
                          IntUnaryOperator bodyFromOfVersion, IntUnaryOperator blocksBeforeOfVersion) {
    }

    /** One check's reader and sinks. */
    private record Checker(FileIOFactory io, int pageSize, ToLongFunction<Path> keptByRecovery, long storeId, DamageSink sink, CutSink cuts) {
        long checkFile(Path p) throws IOException {
            String n = p.getFileName().toString();
            if (n.startsWith("level-") || n.startsWith(RankedExtentDescriptor.FILE_PREFIX)) return 0;
            if (DurableFiles.isTemp(p)) return 0; // a file creation a crash cut short, before its rename: open deletes it, as it is no damage
            if (n.equals(RetentionFileDescriptor.FILE)) {
                try {
                    RetentionFile.read(io, p.getParent());
                } catch (CorruptionException e) {
                    sink.damage(p, e.offset(), e.what());
                }
                return 0;
            }
            // from version 2 a base block follows the header, laid out like a record: checked as the first one
            if (n.equals(SnapshotLogDescriptor.FILE) && foreign(p, SnapshotLogDescriptor.MAGIC,
                    SnapshotLogDescriptor.HEADER_SIZE + SnapshotLogDescriptor.BASE_SIZE, SnapshotLogDescriptor.HEADER_CRC_OFFSET,
                    SnapshotLogDescriptor.HEADER_SIZE + SnapshotLogDescriptor.STORE_TAG_OFFSET, SnapshotLogDescriptor::foreign)) return 0;
            if (n.equals(SnapshotLogDescriptor.FILE)) return checkLog(p, new Layout(SnapshotLogDescriptor.MAGIC, SnapshotLogDescriptor.VERSION_OFFSET,
                    SnapshotLogDescriptor.MIN_VERSION, SnapshotLogDescriptor.VERSION, SnapshotLogDescriptor.HEADER_SIZE, SnapshotLogDescriptor.HEADER_CRC_OFFSET,
                    SnapshotLogDescriptor.RECORD_SIZE, SnapshotLogDescriptor.RECORD_CRC_OFFSET, v -> SnapshotLogDescriptor.RECORD_SIZE,
                    v -> (SnapshotLogDescriptor.recordsFrom(v) - SnapshotLogDescriptor.HEADER_SIZE) / SnapshotLogDescriptor.RECORD_SIZE));
            if (n.startsWith(PagelogDescriptor.FILE_PREFIX) && foreign(p, PagelogDescriptor.MAGIC, PagelogDescriptor.HEADER_SIZE,
                    PagelogDescriptor.HEADER_CRC_OFFSET, PagelogDescriptor.STORE_TAG_OFFSET, PagelogDescriptor::foreign)) return 0;
            if (n.startsWith(PagelogDescriptor.FILE_PREFIX)) return checkLog(p, new Layout(PagelogDescriptor.MAGIC, PagelogDescriptor.VERSION_OFFSET,
                    PagelogDescriptor.MIN_VERSION, PagelogDescriptor.VERSION, PagelogDescriptor.HEADER_SIZE, PagelogDescriptor.HEADER_CRC_OFFSET,
                    PagelogDescriptor.recordBytes(pageSize), PagelogDescriptor.RECORD_CRC_OFFSET, PagelogDescriptor::crcBodyFrom, v -> 0));
            if (!LOG_NAME.matcher(n).matches()) return 0;
            if (foreign(p, MaplogDescriptor.MAGIC, MaplogDescriptor.HEADER_SIZE, MaplogDescriptor.HEADER_CRC_OFFSET, MaplogDescriptor.STORE_TAG_OFFSET,
                    MaplogDescriptor::foreign)) return 0;
            return checkLog(p, new Layout(MaplogDescriptor.MAGIC, MaplogDescriptor.VERSION_OFFSET, MaplogDescriptor.MIN_VERSION, MaplogDescriptor.VERSION,
                    MaplogDescriptor.HEADER_SIZE, MaplogDescriptor.HEADER_CRC_OFFSET, MaplogDescriptor.ENTRY_SIZE, MaplogDescriptor.ENTRY_CRC_OFFSET,
                    v -> MaplogDescriptor.ENTRY_SIZE, v -> 0));
        }

        /**
         * Reports, and returns true for, a file whose whole header (of {@code headerBytes}, starting with {@code magic},
         * its CRC32C at {@code crcAt}) names another store, as {@code why} tells from it: a Pagelog segment or a log part.
         */
        private boolean foreign(Path p, long magic, int headerBytes, int crcAt, int tagAt, BiFunction<ByteBuffer, Long, String> why)
                throws IOException {
            ByteBuffer h = ByteBuffer.allocate(headerBytes).order(ByteOrder.LITTLE_ENDIAN);
            try (FileIO f = io.open(p, false)) {
                if (f.read(h, 0) < headerBytes) return false;
            }
            CRC32C c = new CRC32C();
            c.update(h.array(), 0, crcAt);
            if (h.getLong(0) != magic || h.getInt(crcAt) != (int) c.getValue()) return false;
            String foreign = why.apply(h, storeId);
            if (foreign != null) sink.damage(p, tagAt, foreign);
            return foreign != null;
        }

        /**
         * One fixed-record log in {@code layout}: its header, then every record's CRC32C, up to where recovery cuts it.
         * A header recovery does not keep whole is cut with the file: recovery writes the file anew.
         */
        private long checkLog(Path p, Layout layout) throws IOException {
            try (FileIO f = io.open(p, false)) {
                long onDisk = f.size();
                long kept = keptByRecovery.applyAsLong(p);
                if (kept < 0) { // recovery deletes it: a segment or part set aside after a short one
                    if (onDisk > 0) cuts.cut(p, 0, onDisk);
                    return 0;
                }
                long size = Math.min(onDisk, kept);
                int headerBytes = layout.headerBytes();
                int recordBytes = layout.recordBytes();
                if (size < onDisk) cuts.cut(p, size, onDisk - size);
                if (size < headerBytes && size < onDisk) return 0;
                ByteBuffer h = ByteBuffer.allocate(headerBytes).order(ByteOrder.LITTLE_ENDIAN);
                if (f.read(h, 0) < headerBytes) {
                    sink.damage(p, 0, "header truncated (" + size + " bytes)");
                    return 0;
                }
                CRC32C c = new CRC32C();
                c.update(h.array(), 0, layout.headerCrcAt());
                if (h.getLong(0) != layout.magic() || h.getInt(layout.headerCrcAt()) != (int) c.getValue()) {
                    sink.damage(p, 0, "header is corrupt (magic or CRC32C)");
                    return 0;
                }
                int version = h.getInt(layout.versionAt());
                if (version < layout.minVersion() || version > layout.version()) {
                    sink.damage(p, layout.versionAt(), "unsupported format version " + version + " (this build reads version "
                            + (layout.minVersion() == layout.version() ? "" : layout.minVersion() + " to ") + layout.version() + ")");
                    return 0;
                }
                int bodyFrom = layout.bodyFromOfVersion().applyAsInt(version);
                int blocksBefore = layout.blocksBeforeOfVersion().applyAsInt(version);
                if ((size - headerBytes) % recordBytes != 0)
                    sink.damage(p, size - (size - headerBytes) % recordBytes, "file ends inside a record (" + size + " bytes, records of " + recordBytes + ")");
                long n = (size - headerBytes) / recordBytes;
                ByteBuffer r = ByteBuffer.allocate(recordBytes).order(ByteOrder.LITTLE_ENDIAN);
                for (long i = 0; i < n; i++) {
                    long off = headerBytes + i * recordBytes;
                    f.read(r.clear(), off);
                    c.reset();
                    c.update(r.array(), 0, layout.crcAt());
                    c.update(r.array(), bodyFrom, recordBytes - bodyFrom);
                    if (r.getInt(layout.crcAt()) != (int) c.getValue())
                        sink.damage(p, off, (i < blocksBefore ? "base block" : "record " + (i - blocksBefore)) + " CRC32C mismatch");
                }
                return n;
            }
        }
    }
}
