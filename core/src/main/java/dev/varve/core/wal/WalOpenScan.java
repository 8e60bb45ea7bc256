package dev.varve.core.wal;

import static dev.varve.core.wal.WalSegmentDescriptor.HEADER_SIZE;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.wal.WalRecordScan.Stop;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * Decides, without writing a byte, where a WAL ends when it is opened and whether it is sound: validates every
 * record (length, CRC, LSN equal to its position) from the first LSN recovery needs to the end, and tells a torn
 * tail, which may be cut, from damage, which is refused. {@link Wal#open(WalOpenScan, java.time.Duration)} carries
 * out what the scan decided (the cut, the leftovers' deletion) only once the caller has decided the whole store is
 * sound.
 *
 * <p>Design note: where can a torn write be? Through a mapping (LOG_ONLY, BACKGROUND) a record is written body first
 * and its length last, and appends are serialised, so after a process crash at most the one record being appended is
 * incomplete, and it shows a zero length (with some of its body behind it). A staged FSYNC segment reaches its file
 * by one write of each forced range ({@link WalSegment#force}), which a kill may cut short at a page boundary: its
 * last record may then have its length and not all of its body, a shape FSYNC's rule below cuts as a torn tail, and
 * the segment's header makes that the rule whichever mode reopens it. A segment is forced whole before the next one
 * gets its name, so every named segment but the last is durable whatever the crash; a sealed last segment whose
 * successor has only its temporary name is a switch whose second half ({@link WalSegmentCloser}) a crash cut short,
 * and that file is read as the last segment (named when the scan is carried out). Power loss can tear more, but only
 * what was not forced yet: the tail of the last segment. Hence:
 * <ul>
 *   <li>a bad record in a segment that is not the last is damage;</li>
 *   <li>a bad record with a valid record anywhere after it is damage, except under {@link WalSyncMode#FSYNC} when it
 *       has the shape a power cut leaves ({@link WalRecordScan#tornByPowerLoss}): there the last commit's range goes
 *       out in one write and one fdatasync, and the disk may keep a later sector of it (a whole later record) without
 *       an earlier one, none of it acknowledged;</li>
 *   <li>a zero length followed by bytes of a record that never got its length is a torn tail;</li>
 *   <li>a bad record with a non-zero length at the very end is a torn tail only under {@link WalSyncMode#FSYNC}, the
 *       one mode that promises survival of power loss and so runs with records beyond the last fsync; under
 *       {@code LOG_ONLY} and {@code BACKGROUND} every appended record is whole after a process crash, so it is
 *       damage (after power loss, where those modes promise nothing, the operator accepts the loss
 *       explicitly with {@code truncateDamage}).</li>
 * </ul>
 * The mode each rule speaks of is the one that wrote the segment, which its header records: a store written under
 * FSYNC and opened under LOG_ONLY after a power loss has its torn tail cut, and a damaged last record of a LOG_ONLY
 * segment is refused by an FSYNC open, not cut. Every record of a segment was written under that mode, since a
 * writable open under another one starts a new segment ({@link WalOpenSwitch}). A segment written before the header
 * recorded it (format version 1) is judged by the mode of the open that reads it, {@code mode}.
 *
 * <p>Damage in the part recovery needs is a {@link CorruptionException} naming the file and offset, unless the caller
 * asked to truncate at damage. Records before {@code neededFrom} are not read at all: no recovery needs them.
 */
public final class WalOpenScan {
    private static final String SEGMENTS_ARE_WHOLE = "a segment file is created whole, under a temporary name";
    final FileIOFactory io;
    final Path dir;
    final long segmentSize;
    final WalSyncMode mode;
    /** The segment appending continues in. */
    final long lastIndex;
    /** Offset in the last segment after its last good record. */
    final int endOffset;
    /** Index of the oldest segment kept. */
    final long firstIndex;
    /** What is cut off, or null when the WAL ends cleanly. */
    final WalTailCut tailCut;
    /** Files to delete when the scan is carried out: leftovers of interrupted cleanups and segments after a cut. */
    final List<Path> toDelete;
    /** True when no segment existed: the open creates segment 0. */
    final boolean empty;
    /** The last segment, still under its temporary name (see {@link WalSegmentCloser}): named when carried out; or null. */
    final Path unnamedLast;
    /** The store's durable id the segments were checked against and new ones record, 0 when none is durable yet. */
    final long storeId;
    /** Per record type, whether the scan met one, and the first payload long of the last one (see {@link #lastOf}). */
    private final ScannedTypes types;
    /** The segments read from their durable copy ({@link WalSegmentCopy}), by index: copied into the files when carried out. */
    private final Map<Long, WalSegmentCopy.Choice> copies;

    private WalOpenScan(FileIOFactory io, Path dir, long segmentSize, WalSyncMode mode, long lastIndex, int endOffset,
                        long firstIndex, WalTailCut tailCut, List<Path> toDelete, boolean empty, ScannedTypes types,
                        Path unnamedLast, long storeId, Map<Long, WalSegmentCopy.Choice> copies) {
        this.io = io;
        this.copies = copies;
        this.storeId = storeId;
        this.dir = dir;
        this.segmentSize = segmentSize;
        this.mode = mode;
        this.lastIndex = lastIndex;
        this.endOffset = endOffset;
        this.firstIndex = firstIndex;
        this.tailCut = tailCut;
        this.toDelete = toDelete;
        this.empty = empty;
        this.types = types != null ? types.scanned() : new ScannedTypes();
        this.unnamedLast = unnamedLast;
    }

    /**
     * The first payload long (little-endian) of the last record of {@code type} this scan validated, or -1 when it
     * met none: what the open can learn of the log without reading it again (the latest checkpoint it records).
     */
    public long lastOf(int type) {
        return types.lastHead(type);
    }

    /** The LSN after the last valid record the scan found: where the WAL ends once its tail is cut. */
    public long endLsn() {
        return empty ? WalSegmentDescriptor.firstLsn(0, segmentSize) : WalSegmentDescriptor.lsn(lastIndex, endOffset, segmentSize);
    }

    /** Whether the scan met a valid record of {@code type}. */
    public boolean holds(int type) {
        return types.seen(type);
    }

    /**
     * Scans the WAL in {@code dir}.
     *
     * @param neededFrom     the first LSN recovery reads, or -1 for every record of the oldest segment on
     * @param truncateDamage cut at damage instead of refusing (the operator accepts losing every later record)
     * @throws CorruptionException when records recovery needs are damaged or missing
     */
    public static WalOpenScan run(FileIOFactory io, Path dir, long segmentSize, WalSyncMode mode, long neededFrom,
                                  boolean truncateDamage) {
        return run(io, dir, segmentSize, mode, neededFrom, truncateDamage, null);
    }

    /**
     * {@link #run(FileIOFactory, Path, long, WalSyncMode, long, boolean)}, showing {@code visitor} (when not null) each
     * valid record it scans from {@code neededFrom}: every record the WAL keeps once its tail is cut.
     */
    public static WalOpenScan run(FileIOFactory io, Path dir, long segmentSize, WalSyncMode mode, long neededFrom,
                                  boolean truncateDamage, WalRecordVisitor visitor) {
        return run(io, dir, segmentSize, mode, neededFrom, truncateDamage, visitor, 0);
    }

    /**
     * {@link #run(FileIOFactory, Path, long, WalSyncMode, long, boolean, WalRecordVisitor)} for the store whose id is
     * durable as {@code storeId} (0: none is yet): a segment of another store ({@link WalSegmentDescriptor#foreign}) is
     * refused, truncation or not — it is not damage, and its records are not this store's — and the segments the WAL
     * creates record the id.
     */
    public static WalOpenScan run(FileIOFactory io, Path dir, long segmentSize, WalSyncMode mode, long neededFrom,
                                  boolean truncateDamage, WalRecordVisitor visitor, long storeId) {
        WalSegmentDescriptor.checkSegmentSize(segmentSize);
        List<Long> indexes = listSegments(io, dir);
        List<Path> toDelete = new ArrayList<>();
        Map<Long, WalSegmentCopy.Choice> copies = new TreeMap<>();
        refuseForeign(io, dir, indexes, storeId);
        if (indexes.isEmpty()) {
            if (neededFrom > WalSegmentDescriptor.firstLsn(0, segmentSize)) throw missing(dir, neededFrom, segmentSize);
            return new WalOpenScan(io, dir, segmentSize, mode, 0, HEADER_SIZE, 0, null, toDelete, true, null, null, storeId, new TreeMap<>());
        }
        int start = firstOfLastRun(indexes);
        for (int i = 0; i < start; i++) toDelete.add(segmentPath(dir, indexes.get(i)));
        long first = indexes.get(start);
        long last = indexes.get(indexes.size() - 1);
        Path unnamed = null; // the successor a sealed last segment names, found under its temporary name
        long from = neededFrom < 0 ? WalSegmentDescriptor.firstLsn(first, segmentSize) : neededFrom;
        long fromIndex = WalSegmentDescriptor.segmentIndex(from, segmentSize);
        if (fromIndex < first && indexes.contains(fromIndex)) throw gap(dir, from, fromIndex, indexes);
        if (fromIndex < first || (fromIndex > last && from != WalSegmentDescriptor.firstLsn(last + 1, segmentSize))) {
            throw missing(dir, from, segmentSize);
        }
        CRC32C crc = new CRC32C();
        ScannedTypes types = new ScannedTypes(visitor);
        WalSegmentWindow window = new WalSegmentWindow(segmentSize); // each segment is read through it in turn
        int endOffset = (int) segmentSize; // a mark at the next segment's start: the last one is full
        for (long index = Math.min(fromIndex, last); index <= last; index++) {
            Path path = unnamed != null && index == last ? unnamed : segmentPath(dir, index);
            WalSegmentCopy.Choice copied = WalSegmentCopy.choose(io, path, index, segmentSize, mode, index < last, truncateDamage);
            if (copied != null) {
                copies.put(index, copied);
                path = copied.copy();
            }
            int offset = index == fromIndex ? WalSegmentDescriptor.offset(from, segmentSize) : HEADER_SIZE;
            Stop stop;
            try (window) { // closes the segment's file; the window's buffer serves the next one
                if (!window.open(io, path, index)) {
                    stop = new Stop(0, wrongSize(io, path, index, segmentSize), SEGMENTS_ARE_WHOLE);
                } else {
                    ByteBuffer header = window.cover(0, HEADER_SIZE);
                    WalSegmentDescriptor.refuseOtherVersion(header, path);
                    WalSegmentDescriptor.refuseForeign(header, path, storeId); // the unnamed newest one, not seen before
                    String bad = checkHeader(header, index, segmentSize);
                    WalSyncMode judged = WalSegmentDescriptor.judgedUnder(header, mode); // read before the scan moves the window
                    stop = bad != null ? new Stop(0, bad, SEGMENTS_ARE_WHOLE)
                            : fromIndex > last ? new Stop((int) segmentSize, null, null)
                            : WalRecordScan.scanRecords(window, offset, index < last, judged,
                                    copied != null || judged == WalSyncMode.FSYNC, crc, types);
                }
            }
            Path successor = index == last && unnamed == null ? unnamedSuccessor(io, dir, stop, index) : null;
            if (successor != null) {
                unnamed = successor;
                last++;
                endOffset = stop.offset();
                continue;
            }
            if (stop.reason() == null && stop.sealed() && index == last) {
                // the newest segment names a successor: that file existed and is gone, with its records
                Path next = segmentPath(dir, last + 1);
                if (!truncateDamage) {
                    throw new CorruptionException("WAL segment " + path.getFileName() + " is sealed, so its successor "
                            + next.getFileName() + " was created, but that file is missing. To accept losing its "
                            + "records, open with the option to truncate a damaged WAL", next, 0);
                }
                int sealAt = stop.offset() - WalSegmentDescriptor.SEAL_BYTES;
                WalTailCut cut = new WalTailCut(path, sealAt, WalSegmentDescriptor.lsn(index, sealAt, segmentSize),
                        "successor " + next.getFileName() + " missing", 0);
                return new WalOpenScan(io, dir, segmentSize, mode, index, sealAt, first, cut, toDelete, false, types, null, storeId, copies);
            }
            if (stop.reason() == null && !stop.sealed() && index < last) stop = WalRecordScan.unsealed(stop, index);
            if (stop.reason() == null) {
                endOffset = stop.offset();
                continue;
            }
            if (stop.evidence() != null && !truncateDamage) {
                throw new CorruptionException("WAL damaged where recovery needs it (" + stop.reason() + "); not a torn "
                        + "write: " + stop.evidence() + ". To accept losing every record from here on, open with the "
                        + "option to truncate a damaged WAL", path, stop.offset());
            }
            if (stop.offset() == 0) { // the whole segment is bad: the WAL ends where the previous one does
                if (index == fromIndex && offset > 0) throw missing(dir, from, segmentSize);
                for (long i = last; i >= index; i--) toDelete.add(i == last && unnamed != null ? unnamed : segmentPath(dir, i));
                WalTailCut cut = new WalTailCut(path, 0, WalSegmentDescriptor.firstLsn(index, segmentSize),
                        "segment " + path.getFileName() + ": " + stop.reason(), (int) (last - index + 1));
                return new WalOpenScan(io, dir, segmentSize, mode, index - 1, (int) segmentSize, first, cut, toDelete,
                        false, types, null, storeId, copies);
            }
            for (long i = last; i > index; i--) toDelete.add(i == last && unnamed != null ? unnamed : segmentPath(dir, i));
            WalTailCut cut = new WalTailCut(path, stop.offset(), WalSegmentDescriptor.endLsn(index, stop.offset(), segmentSize),
                    stop.reason(), (int) (last - index));
            return new WalOpenScan(io, dir, segmentSize, mode, index, stop.offset(), first, cut, toDelete, false, types,
                    index == last ? unnamed : null, storeId, copies);
        }
        return new WalOpenScan(io, dir, segmentSize, mode, last, endOffset, first, null, toDelete, false, types, unnamed, storeId, copies);
    }

    /**
     * Why a segment file that does not have the segment size is bad: its header's damage when the header fails its
     * check (the header records the size, so with it unreadable the size said nothing on its own: the size it was
     * judged against may be a default, not the store's), else the size. A newer release's segment is refused as such.
     */
    private static String wrongSize(FileIOFactory io, Path path, long index, long segmentSize) {
        try (FileIO f = io.open(path, false)) {
            String bad = WalSegmentDescriptor.headerProblem(f, path, index);
            if (bad != null) return bad;
        } catch (IOException | UncheckedIOException e) {
            // the file read a moment ago: its size is reason enough
        }
        return "file size is not " + segmentSize + " bytes";
    }

    /**
     * The successor of the newest named segment, which ended at {@code stop}, when it exists only under its temporary
     * name: a switch whose second half (this segment forced, then the successor named; {@link WalSegmentCloser}) a crash
     * cut short. The seal proves the file was the successor; it is read as the newest segment. Null otherwise.
     */
    static Path unnamedSuccessor(FileIOFactory io, Path dir, Stop stop, long index) {
        Path temp = WalSegment.tempPath(dir, index + 1);
        return stop.reason() == null && stop.sealed() && io.exists(temp) ? temp : null;
    }

    /**
     * Refuses the first named segment whose whole header names another store than {@code storeId}'s: every one, the
     * leftovers and those recovery does not read included, since the WAL keeps them for its readers. Only headers are
     * read; one that is damaged is left to the scan's own checks.
     */
    private static void refuseForeign(FileIOFactory io, Path dir, List<Long> indexes, long storeId) {
        if (storeId == 0) return;
        ByteBuffer h = ByteBuffer.allocate(HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        for (long index : indexes) {
            Path path = segmentPath(dir, index);
            try (FileIO f = io.open(path, false)) {
                if (f.read(h.clear(), 0) < HEADER_SIZE) continue;
            } catch (IOException e) {
                throw new StorageException("cannot read WAL segment header", path, e);
            }
            WalSegmentDescriptor.refuseForeign(h, path, storeId);
        }
    }

    /** What the scan found cut off, or null when the WAL ends cleanly. */
    public WalTailCut tailCut() {
        return tailCut;
    }

    private static CorruptionException missing(Path dir, long lsn, long segmentSize) {
        Path path = segmentPath(dir, WalSegmentDescriptor.segmentIndex(lsn, segmentSize));
        return new CorruptionException("WAL segment holding LSN " + lsn + ", which recovery needs, is missing", path,
                WalSegmentDescriptor.offset(lsn, segmentSize));
    }

    /** The segment recovery needs is there, but one after it is not: the first segment missing is what is lost. */
    private static CorruptionException gap(Path dir, long lsn, long neededIndex, List<Long> indexes) {
        long missing = neededIndex + 1;
        while (indexes.contains(missing)) missing++;
        return new CorruptionException("WAL segment " + segmentPath(dir, missing).getFileName() + " is missing: recovery "
                + "needs every record from LSN " + lsn + " (in " + segmentPath(dir, neededIndex).getFileName()
                + ") on, and the segments after the gap cannot follow it", segmentPath(dir, missing), 0);
    }

    private static Path segmentPath(Path dir, long index) {
        return dir.resolve(WalSegmentDescriptor.fileName(index));
    }

    private static String checkHeader(ByteBuffer header, long index, long segmentSize) {
        String bad = WalSegmentDescriptor.checkHeader(header, index);
        if (bad == null && WalSegmentDescriptor.headerSegmentSize(header) != segmentSize) {
            bad = "header segment size " + WalSegmentDescriptor.headerSegmentSize(header) + " differs from the file's";
        }
        return bad;
    }

    /**
     * Applies this scan's repairs for {@link Wal#open(WalOpenScan, java.time.Duration)}: the records only a durable copy
     * held copied into their segment file and forced (a name, and every deletion, relies on earlier segments being
     * whole), then deletions (newest first; durable copies too, but the last segment's when it goes on being forced
     * through one), then the cut zeroed; returns the last segment, open, forced through a durable copy with
     * {@code withCopy}.
     */
    WalSegment carryOut(boolean withCopy) {
        try {
            io.createDirectories(dir);
            copies.forEach((i, c) -> {
                if (i > lastIndex) return; // cut off
                Path file = i == lastIndex && unnamedLast != null ? unnamedLast : segmentPath(dir, i);
                int to = i == lastIndex ? Math.min(c.copyEnd(), endOffset) : c.copyEnd(); // the last one up to the cut
                WalSegmentCopy.copyInto(io, c.copy(), file, c.fileEnd(), to);
            });
            if (unnamedLast != null) io.atomicMove(unnamedLast, dir.resolve(WalSegmentDescriptor.fileName(lastIndex)));
            for (Path p : io.list(dir, WalSegmentDescriptor.FILE_PREFIX)) {
                if (p.getFileName().toString().endsWith(WalSegmentDescriptor.TEMP_SUFFIX)) io.delete(p);
            }
            for (Path p : toDelete) io.deleteDurably(p); // newest first, each before the next: a power cut leaves no gap
            for (Path p : io.list(dir, WalSegmentDescriptor.FILE_PREFIX)) {
                long i = WalSegmentCopy.parseIndex(p);
                if (i >= 0 && !(withCopy && i == lastIndex && !empty)) io.delete(p);
            }
        } catch (IOException e) {
            throw new StorageException("cannot clean up the WAL directory", dir, e);
        }
        if (empty) return WalSegment.create(io, dir, 0, segmentSize, mode, storeId, withCopy);
        Path path = dir.resolve(WalSegmentDescriptor.fileName(lastIndex));
        WalSegment last = WalSegment.open(io, path, lastIndex, segmentSize, withCopy);
        if (last == null) throw new StorageException("WAL segment changed size while it was opened", path);
        if (tailCut != null) last.zero(endOffset, (int) segmentSize); // the opener says so (Wal#tailCut): it knows whether files change
        return last;
    }

    /** Segment indexes in the directory, ascending; temporary files of crashed segment creations are ignored. */
    private static List<Long> listSegments(FileIOFactory io, Path dir) {
        List<Long> indexes = new ArrayList<>();
        if (!io.exists(dir)) return indexes;
        try {
            for (Path file : io.list(dir, WalSegmentDescriptor.FILE_PREFIX)) {
                long index = WalSegmentDescriptor.parseIndex(file);
                if (index >= 0) indexes.add(index);
            }
        } catch (IOException e) {
            throw new StorageException("cannot list WAL directory", dir, e);
        }
        Collections.sort(indexes);
        return indexes;
    }

    /**
     * Position of the first segment of the last contiguous run: segments before a gap in the numbering are leftovers
     * of an interrupted {@code deleteSegmentsBefore} (deletes may reach the disk out of order), or damage when
     * recovery needs them, which {@link #run} finds by the needed segment being missing.
     */
    private static int firstOfLastRun(List<Long> indexes) {
        int start = 0;
        for (int i = 1; i < indexes.size(); i++) {
            if (indexes.get(i) != indexes.get(i - 1) + 1) start = i;
        }
        return start;
    }
}
