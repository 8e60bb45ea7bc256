package dev.varve.snapshot;

import dev.varve.core.io.Closeables;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.page.Page;
import dev.varve.core.util.StoreThreads;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Retro's Pagelog: the archived pre-states, appended in log-structured segment files ({@code pagelog-<segment>.log}).
 * Records are fixed-size, so reclamation can later drop whole segments; segment and slot follow from a record's
 * global index. A record holds a whole page, or a pack of diffs (diff capture): pre-states stored as the chunks that
 * changed since an earlier version of the same page in this volume, read by applying the chain of diffs back to a
 * whole page ({@link DiffChain}). An address names a whole record or an entry of a pack.
 *
 * The layout — segment header, fixed-size records each with its (lo, hi] and CRC32C, packs and their entries — is
 * {@link PagelogDescriptor}'s. A record is needed by no snapshot outside its (lo, hi]; a segment keeps the widest
 * such range of its records, which is all reclamation needs to decide that none of them is reachable any more — a
 * diff's chain never leaves its segment, so what a needed diff reads is kept by that same range.
 *
 * <p>The write side — staging, writing, fsync, reclamation — is synchronized: the archiver stages and writes
 * while a checkpoint's flush forces and its end reclaims. Reads (as-of views) go through its {@link PagelogReader}
 * and take no lock: records below {@link #end()} never change, and views pin what they read.
 */
final class Pagelog implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Pagelog.class);
    private static final int HEADER = PagelogDescriptor.HEADER_SIZE;
    private static final int BODY = PagelogDescriptor.IMAGE_OFFSET;

    private final FileIOFactory io;
    private final Path dir;
    private final int pageSize;
    private final int recordBytes;
    private final long recordsPerSegment;
    /**
     * Records the volume can name over its whole life: an address keeps the record's index in its low
     * {@link PagelogDescriptor#RECORD_BITS} bits and a segment's number is an int (below its largest, so that the
     * number after the last one still is), and indexes are never reused. Past it an address would name another record
     * (its top index bit read as an entry offset) or a negative segment.
     */
    private final long recordLimit;
    /** Segment number → file; appended by the archiver, read by views. */
    private final Map<Integer, PartFile> segments = new ConcurrentHashMap<>();
    /** Segments before the last one that may stay open once read: enough for the readers of a few in turn. */
    private final DescriptorBudget budget = new DescriptorBudget(16);
    /** The store's durable id, shared by the archive's volumes (0 until a marker holds it): what new segments record. */
    private final AtomicLong storeId;
    /** Records appended but not written yet, one segment's run at most. */
    private final ByteBuffer stage;
    /** The read side: pre-states at addresses, read without this volume's lock. */
    final PagelogReader reader;
    private final CRC32C crc = new CRC32C();
    /** Next address to write (readable records end here) and next address to stage. */
    private volatile long end;
    private long staged;
    /** Segments before this one were reclaimed. */
    private volatile int firstSegment;
    /** Per segment, the widest (lo, hi] of its records: {lo, hi}. */
    private final Map<Integer, long[]> ranges = new ConcurrentHashMap<>();
    /** Segments whose range was read from unchecked record headers. */
    private final java.util.Set<Integer> unchecked = ConcurrentHashMap.newKeySet();
    /** Segment number → its format version (records' CRCs and kinds depend on it). */
    private final Map<Integer, Integer> versions = new ConcurrentHashMap<>();
    /** Whether a diff may be appended: the segment being written (or the next one) is of the current version. */
    private volatile boolean packsAllowed;
    /** The diff pack being filled: it is staged when sealed. */
    private final DiffPack pack;
    /** The largest hi of any record staged: a pack sealed after them covers it too, so hi grows with the address. */
    private long stagedHi;
    private final DiffChain chain;
    /** The ranges of the diff being added. */
    private final int[] diffRanges;
    private long reclaimedBytes;
    /** The segments written since their last force, and their forcing. */
    private final SegmentForcing forcing;
    /** Segments found past one a power loss left short, newest first: the recovery cut deletes them. */
    private final List<Path> pastShortSegment;
    /**
     * Segments whose header records no segment size (written by a build before the field): open refuses one that is
     * short and not the last, so the archiver forces such a segment when it moves on from it, as before.
     */
    private final Set<Integer> unsized = ConcurrentHashMap.newKeySet();

    /** A volume that names no store and checks none (tests of the volume alone). */
    Pagelog(FileIOFactory io, Path dir, int pageSize, long segmentBytes) {
        this(io, dir, pageSize, segmentBytes, new AtomicLong());
    }

    /**
     * A volume of the store whose id {@code storeId} holds once a checkpoint marker does (0 until then): its segments
     * are checked against it at open, and new ones record it.
     */
    Pagelog(FileIOFactory io, Path dir, int pageSize, long segmentBytes, AtomicLong storeId) {
        this.io = io;
        this.storeId = storeId;
        this.dir = dir;
        this.pageSize = pageSize;
        this.recordBytes = PagelogDescriptor.recordBytes(pageSize);
        this.recordsPerSegment = Math.max(16, (segmentBytes - HEADER) / recordBytes);
        this.recordLimit = Math.min(1L << PagelogDescriptor.RECORD_BITS, (long) Integer.MAX_VALUE * recordsPerSegment);
        this.stage = ByteBuffer.allocateDirect(recordBytes * 256).order(ByteOrder.LITTLE_ENDIAN);
        this.chain = new DiffChain(pageSize);
        this.reader = new PagelogReader(this, segments, pageSize, recordBytes, recordsPerSegment, chain, io.mapsSealedFiles());
        this.diffRanges = PageDiff.rangesFor(pageSize);
        this.pack = new DiffPack(pageSize, chain);
        this.forcing = new SegmentForcing(this, segments, budget, dir, () -> firstSegment, this::lastSegment,
                "varve-pagelog-forcer" + StoreThreads.suffix());
        PagelogSegments found = PagelogSegments.open(io, dir, pageSize, recordsPerSegment, budget, storeId.get());
        segments.putAll(found.segments);
        versions.putAll(found.versions);
        unsized.addAll(found.unsized);
        pastShortSegment = found.pastShortSegment;
        if (!segments.isEmpty()) firstSegment = found.segments.firstKey(); // the ones before were reclaimed
        if (!segments.isEmpty()) segments.get(lastSegment()).keepOpen(true); // appended to
        end = segments.isEmpty() ? 0 : lastSegment() * recordsPerSegment + recordsIn(lastSegment());
        staged = end;
        packsAllowed = lastSegmentTakesPacks();
        try {
            for (int seg : segments.keySet()) ranges.put(seg, scanRange(seg));
        } catch (RuntimeException e) {
            // as above: nobody holds a Pagelog whose constructor failed, so an IO error scanning the records closes
            // every segment here, or their descriptors stay open
            Closing.closeAll(e, segments.values());
            throw e;
        }
    }

    /** The (lo, hi] over the record headers of segment {@code seg}, unchecked until reclamation reads it whole. */
    private long[] scanRange(int seg) {
        unchecked.add(seg);
        return reader.headerRange(seg, Math.min(recordsPerSegment, end - (long) seg * recordsPerSegment));
    }

    /** True when the record in {@code rec}, of a segment of {@code version}, matches its CRC (its header fields and body). */
    boolean intact(ByteBuffer rec, int version) {
        return rec.getInt(PagelogDescriptor.RECORD_CRC_OFFSET) == PagelogDescriptor.recordCrc(rec, 0, recordBytes, version, new CRC32C());
    }

    private int lastSegment() {
        return firstSegment + segments.size() - 1;
    }

    private long recordsIn(int segment) {
        return PagelogSegments.recordsIn(segments.get(segment), recordBytes);
    }

    /** Deletes the segments open set aside, the newest first, each deletion durable before the next: never a gap. */
    private void deleteSetAside() throws IOException {
        for (Path p : pastShortSegment) { // added newest first
            LOG.warn("Pagelog segment {} lies past one a power loss left short; it holds nothing a checkpoint made durable and is deleted", p);
            io.deleteDurably(p);
        }
        pastShortSegment.clear();
    }

    /** The segment file that holds (or would hold) {@code address}. */
    Path pathOf(long address) {
        return dir.resolve(PagelogDescriptor.fileName((int) (PagelogDescriptor.recordOf(address) / recordsPerSegment)));
    }

    /**
     * The file that lacks records {@link #end()} to {@code needed}: the segment the volume ends in when it is there
     * (cut short, the segments after it set aside), else the last one needed (deleted).
     */
    Path whereShort(long needed) {
        int seg = (int) (end / recordsPerSegment);
        return segments.containsKey(seg) ? segments.get(seg).path() : pathOf(needed - 1);
    }

    /** Whether a pre-state captured now may be archived as a diff (its record will lie in a segment of this version). */
    boolean packsAllowed() {
        return packsAllowed;
    }

    int pageSize() {
        return pageSize;
    }

    /** Next address to be written. */
    long end() {
        return end;
    }

    /** Bytes held on disk. */
    long bytes() {
        long records = end - (long) firstSegment * recordsPerSegment;
        return records * recordBytes + (long) segments.size() * HEADER;
    }

    /** True when {@code address} was written and not reclaimed. */
    boolean holds(long address) {
        long record = PagelogDescriptor.recordOf(address);
        return record >= (long) firstSegment * recordsPerSegment && record < end;
    }

    /** Bytes given back by {@link #reclaimOldest} since open. */
    long reclaimedBytes() {
        return reclaimedBytes;
    }

    /** A test of a segment's widest (lo, hi]: true when no snapshot that still matters lies in it. */
    interface Unreachable {
        boolean test(long lo, long hi);
    }

    /**
     * Deletes the oldest segments, in temporal order, while they lie wholly below {@code limit} and none of their
     * records is {@code reachable} — whole files, nothing copied — never the segment being written.
     */
    synchronized void reclaimOldest(long limit, Unreachable unreachable) {
        while (firstSegment < lastSegment() && (firstSegment + 1L) * recordsPerSegment <= limit) {
            int seg = firstSegment;
            if (unchecked.remove(seg)) ranges.put(seg, reader.checkedRange(seg, versions.get(seg))); // a damaged header must not let a needed segment go
            long[] range = ranges.getOrDefault(seg, new long[]{Long.MAX_VALUE, 0});
            if (!unreachable.test(range[0], range[1])) return;
            FileIO f = segments.get(seg);
            try {
                long size = f.size();
                f.close();
                io.deleteDurably(f.path()); // before the next one goes: a power cut must not leave a gap, which open refuses
                reclaimedBytes += size;
            } catch (IOException e) {
                throw new StorageException("cannot delete a reclaimed Pagelog segment: " + e.getMessage(), f.path(), e);
            }
            firstSegment = seg + 1; // readers never ask for reclaimed addresses: every live mapping lies above
            segments.remove(seg);
            ranges.remove(seg);
            versions.remove(seg);
            unchecked.remove(seg);
        }
    }

    /** Whether segment {@code seg}, read through {@code f}, was reclaimed: asked once {@link #reclaimOldest} is done. */
    synchronized boolean reclaimed(int seg, FileIO f) {
        return segments.get(seg) != f;
    }

    /** Fragmentation: see {@link PagelogReader#deadBytes}. */
    long deadBytes(Unreachable unreachable, java.util.function.LongPredicate base) {
        return reader.deadBytes(firstSegment, unreachable, base);
    }

    /**
     * Stages the image at [0, pageSize) of {@code image} for writing and returns its address; staged records reach
     * the file at {@link #writeStaged} (one write per run of records, not per page).
     */
    synchronized long append(long pageId, long lo, long hi, ByteBuffer image, int imageOffset) {
        int at = stageRecord(pageId, lo, hi, PagelogDescriptor.KIND_WHOLE);
        long address = staged - 1;
        stage.put(at + BODY, image, imageOffset, pageSize);
        sealRecord(at, address);
        return address;
    }

    /**
     * Adds the pre-state of {@code pageId} at [0, pageSize) of {@code image} as a diff against the version at
     * {@code base} in this volume, whose chain ends at whole record {@code head}, to the pack being filled (sealed first
     * when it has no room); returns the entry's provisional address, which {@link #resolve} turns into its address
     * once {@link #writeStaged} has sealed the pack. The diff is the runs of chunks set in {@code changed} (a mask of
     * {@link Page#CHUNKS}: what the page's writes touched since the base). A chain never leaves its segment: when the
     * pack will lie in a later segment than {@code head}, the page is staged whole instead and its address returned
     * (and so is a diff too large for a pack). So a segment is reclaimed with everything its diffs read, and a base is
     * never gone while a diff on it may be read.
     */
    synchronized long appendDiff(long pageId, long lo, long hi, long base, long head, long[] changed, ByteBuffer image, int imageOffset) {
        int n = PageDiff.chunkRuns(changed, pageSize / Page.CHUNKS, diffRanges);
        int bytes = PagelogDescriptor.rangeEntryBytes(n, PageDiff.payloadBytes(diffRanges, n));
        if (bytes > pageSize - PagelogDescriptor.PACK_HEADER_SIZE) return append(pageId, lo, hi, image, imageOffset);
        if (pack.isOpen() && !pack.fits(bytes)) sealPack(); // first: sealing may take the segment's last record
        if (head / recordsPerSegment != staged / recordsPerSegment) return append(pageId, lo, hi, image, imageOffset); // packs are sealed in staged's segment
        return pack.add(pageId, lo, hi, base, head, diffRanges, n, image, imageOffset);
    }

    /** The address of the entry {@code address} names provisionally, once its pack is sealed; any other address as it is. */
    synchronized long resolve(long address) {
        return pack.resolve(address);
    }

    /** Whether {@link #appendDiff} returned a diff entry's (provisional) address rather than a whole record's. */
    static boolean isDiff(long appended) {
        return DiffPack.isProvisional(appended);
    }

    /**
     * Makes room for one record at the end of the stage (sealing the open pack first when a whole page would take the
     * segment's last record: a pack never leaves the segment its chains are in; writing the stage when it is full or
     * the record starts a segment), fills its header but the CRC, zeroes its body, and returns its stage offset.
     */
    private int stageRecord(long pageId, long lo, long hi, int kind) {
        if (staged >= recordLimit) // before anything is staged: the refused capture changes nothing
            throw new StorageException("the Pagelog has used all " + recordLimit + " records its addresses can name (record indexes of "
                    + PagelogDescriptor.RECORD_BITS + " bits, segment numbers below " + Integer.MAX_VALUE
                    + ", never reused over the archive's life): it archives no more pre-states", dir);
        if (kind == PagelogDescriptor.KIND_WHOLE && pack.isOpen() && staged % recordsPerSegment == recordsPerSegment - 1) sealPack();
        if (stage.remaining() < recordBytes || (staged % recordsPerSegment == 0 && stage.position() > 0)) writeStage();
        long address = staged;
        int at = stage.position();
        stage.putLong(at + PagelogDescriptor.PAGE_ID_OFFSET, pageId).putLong(at + PagelogDescriptor.HI_OFFSET, hi)
                .putLong(at + PagelogDescriptor.LO_OFFSET, lo).putInt(at + PagelogDescriptor.RECORD_CRC_OFFSET, 0)
                .putInt(at + PagelogDescriptor.KIND_OFFSET, versionOf(address) == PagelogDescriptor.MIN_VERSION ? 0 : kind);
        for (int i = BODY; i < recordBytes; i += Long.BYTES) stage.putLong(at + i, 0);
        stage.position(at + recordBytes);
        staged = address + 1;
        stagedHi = Math.max(stagedHi, hi);
        widen(address, lo, hi);
        return at;
    }

    /** Sets the CRC of the staged record at stage offset {@code at}, address {@code address}. */
    private void sealRecord(int at, long address) {
        stage.putInt(at + PagelogDescriptor.RECORD_CRC_OFFSET, PagelogDescriptor.recordCrc(stage, at, recordBytes, versionOf(address), crc));
    }

    /** Stages the open pack as the next record, its hi at least that of every record before it. */
    private void sealPack() {
        int at = stageRecord(PagelogDescriptor.NO_PAGE, pack.lo(), Math.max(pack.hi(), stagedHi), PagelogDescriptor.KIND_PACK);
        long record = staged - 1;
        pack.sealInto(stage, at + BODY, record, record - record % recordsPerSegment);
        sealRecord(at, record);
    }

    /** The format version of the segment record {@code address} lies (or will lie) in. */
    int versionOf(long address) {
        return versions.getOrDefault((int) (address / recordsPerSegment), PagelogDescriptor.VERSION);
    }

    /** Widens the range of the segment of record {@code address} by (lo, hi]. */
    private void widen(long address, long lo, long hi) {
        long[] range = ranges.computeIfAbsent((int) (address / recordsPerSegment), x -> new long[]{Long.MAX_VALUE, 0});
        range[0] = Math.min(range[0], lo);
        range[1] = Math.max(range[1], hi);
    }

    /** Seals the open pack and writes every staged record; they become readable. */
    synchronized void writeStaged() {
        if (pack.isOpen()) sealPack();
        writeStage();
    }

    /** Writes the staged records (one run in one segment). */
    private void writeStage() {
        if (stage.position() == 0) return;
        long first = end;
        int seg = (int) (first / recordsPerSegment);
        try {
            // The new segment's creation is durable at once (DurableFiles.create) while the records of the one before
            // may not be: no fsync here, where the archiver would wait out a whole segment's write-back with captures
            // piling up behind it. The next checkpoint's flush forces the segments filled since the last one before it
            // stops the archiver (forceFilled), and open sets aside what follows a segment a power loss left short.
            if (!segments.containsKey(seg)) {
                if (unsized.contains(seg - 1)) forcing.forceSegments(seg - 1); // else a power cut leaves a short one open refuses
                else forcing.forceOldestFilled(seg);
                newSegment(seg);
                if (segments.containsKey(seg - 1)) forcing.filled(seg - 1);
            }
            stage.flip();
            segments.get(seg).write(stage, offsetOf(first));
        } catch (IOException e) {
            throw new StorageException("Pagelog append failed: " + e.getMessage(), dir.resolve(PagelogDescriptor.fileName(seg)), e);
        } finally {
            stage.clear();
        }
        forcing.written(seg);
        end = staged;
    }

    private void newSegment(int seg) throws IOException {
        PartFile created = PartFile.created(io, DurableFiles.create(io, dir.resolve(PagelogDescriptor.fileName(seg)),
                PagelogDescriptor.header(pageSize, seg, (int) recordsPerSegment, storeId.get())), budget);
        created.keepOpen(true);
        if (!segments.isEmpty()) segments.get(lastSegment()).keepOpen(false); // it may let go of its descriptor once forced
        segments.put(seg, created);
        budget.trim();
        versions.put(seg, PagelogDescriptor.VERSION);
        packsAllowed = true;
    }

    /** Where record {@code address} lies in its segment file. */
    long offsetOf(long address) {
        return HEADER + (address % recordsPerSegment) * recordBytes;
    }

    /** Makes every appended record durable. */
    synchronized void force() {
        writeStaged();
        forcing.forceSegments(lastSegment());
    }

    /** See {@link SegmentForcing#forceFilled}. */
    void forceFilled() {
        forcing.forceFilled();
    }

    /**
     * Drops records at and after {@code newEnd} (recovery: data no durable mapping references), and the part of a
     * record a power cut left at the end, which the next append would otherwise only overwrite.
     */
    synchronized void truncate(long newEnd) {
        try {
            deleteSetAside();
            if (newEnd >= end && !segments.isEmpty()) {
                PartFile last = segments.get(lastSegment());
                long whole = HEADER + (end - (long) lastSegment() * recordsPerSegment) * recordBytes;
                if (last.size() > whole) last.truncate(whole);
            }
        } catch (IOException e) {
            throw new StorageException("cannot cut the Pagelog's torn tail: " + e.getMessage(), dir, e);
        }
        if (newEnd >= end) return;
        reader.forget(); // the addresses from newEnd on will name new records
        if (newEnd < (long) firstSegment * recordsPerSegment)
            throw new CorruptionException("the recovered checkpoint mark needs Pagelog address " + newEnd + " but its segment is gone", pathOf(newEnd), 0);
        try {
            int keep = newEnd == 0 ? 0 : (int) ((newEnd - 1) / recordsPerSegment) + 1; // segments [0, keep) hold [0, newEnd)
            while (!segments.isEmpty() && lastSegment() >= Math.max(keep, firstSegment + 1)) {
                PartFile f = segments.remove(lastSegment());
                f.close();
                io.deleteDurably(f.path()); // the newest first, each before the next: no gap, even after a power cut
            }
            if (keep > firstSegment) {
                PartFile last = segments.get(keep - 1);
                last.keepOpen(true);
                last.truncate(HEADER + (newEnd - (keep - 1L) * recordsPerSegment) * recordBytes);
                last.force();
            } else if (!segments.isEmpty()) {
                segments.get(firstSegment).keepOpen(true);
                segments.get(firstSegment).truncate(HEADER);
                segments.get(firstSegment).force();
            }
            staged = newEnd;
            pack.discard();
        } catch (IOException e) {
            throw new StorageException("cannot truncate the Pagelog: " + e.getMessage(), dir, e);
        }
        end = newEnd;
        ranges.keySet().removeIf(seg -> !segments.containsKey(seg));
        versions.keySet().removeIf(seg -> !segments.containsKey(seg));
        unchecked.removeIf(seg -> !segments.containsKey(seg));
        unsized.removeIf(seg -> !segments.containsKey(seg));
        packsAllowed = lastSegmentTakesPacks(); // the cut may have taken every segment of the current format: diffs must not follow into an older one
        if (!segments.isEmpty()) ranges.put(lastSegment(), scanRange(lastSegment()));
    }

    /** Whether the segment appended to next (the last one, or a new one when there is none) holds diff packs of the current layout. */
    private boolean lastSegmentTakesPacks() {
        return segments.isEmpty() || versions.get(lastSegment()) >= PagelogDescriptor.RANGE_ENTRY_VERSION;
    }

    @Override
    public void close() {
        forcing.close(); // a force ahead under way ends before its segment closes
        Closeables.closeAll(segments.values().toArray(new AutoCloseable[0]));
    }
}
