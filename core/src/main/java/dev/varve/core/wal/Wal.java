package dev.varve.core.wal;

import static dev.varve.core.wal.WalSegmentDescriptor.HEADER_SIZE;
import static dev.varve.core.wal.WalSegmentDescriptor.RECORD_HEADER_SIZE;

import dev.varve.config.WalSyncMode;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.util.StoreThreads;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * The write-ahead log writer: appends records to segment files (layout in {@link WalSegmentDescriptor}) and makes
 * them durable as the {@link WalSyncMode} promises.
 *
 * <p>Design note. An append reserves its place under {@code appendLock} (a few field updates), then copies the
 * record body and computes its CRC outside the lock, so concurrent writers copy in parallel. Under LOG_ONLY and
 * BACKGROUND the segment is mapped: a store into the mapping reaches the OS at once, so every returned append
 * survives a process crash. Under FSYNC, whose appends are promised only once committed, the segment is staged in a
 * buffer of the process and written to its file when forced (see {@link WalSegment} for why). The length is written last,
 * with release ordering and in LSN order (each append waits until its predecessor is published, see
 * {@link #publish}), so a torn record never shows a valid length and CRC, and after a crash no record with a length
 * follows one without: open's rule for telling a torn tail from damage holds as with serial appends. Durability
 * against power loss is a separate step, a force of the range not durable yet, one thread at a time: group commit
 * ({@link WalGroupCommit}) is that a thread which gets to force forces everything appended so far
 * ({@link WalForcer}), and the threads waiting for that force all wake when it ends; those it covered return without
 * forcing again. A segment switch neither writes a file nor (mapped) forces one while writers wait: the next file is
 * prepared ahead ({@link WalSegmentPreparer}), the old one forced behind ({@link WalSegmentCloser}). Lock order is
 * appendLock, then the force lock; a forcing thread never takes appendLock.
 *
 * <p>Failure: an {@link IOException} becomes a {@link StorageException} naming the file, and from then on the WAL
 * refuses appends (it cannot vouch for what reached the disk). Recovery is to reopen it.
 */
public final class Wal implements AutoCloseable {
    private final Path dir;
    private final FileIOFactory io;
    private final long segmentSize;
    private final WalSyncMode mode;
    private final int maxPayloadBytes;
    private final WalTailCut tailCut;
    private final WalBackgroundFlusher flusher;
    private final WalSegmentPreparer preparer;
    private final WalSegmentCloser closer; // finishes a mapped segment's switch
    /** The segment whose file {@link #preparer} was last asked for; appendLock. */
    private long preparing = -1;

    private final ReentrantLock appendLock = new ReentrantLock();
    /** Serialises forcing; under FSYNC a switch takes its lock too (the staging buffer is free only with no force running). */
    private final WalGroupCommit groupCommit;
    private final WalForcer forcer;
    /** Under FSYNC, the buffer the segment being written is staged in (see {@link WalSegment}); otherwise null. */
    private final ByteBuffer staging;
    private final Object deleteLock = new Object();

    /** Written under appendLock (+ the force lock under FSYNC); a force reads {@link #forcer}'s view of it instead. */
    private WalSegment current;
    private int endOffset; // appendLock: where the next record goes in current
    /** The end LSN of the last record reserved; the position reaches it once every reserved record is published. */
    private long reservedEnd; // appendLock
    private volatile long currentIndex;
    /**
     * Next LSN, advanced after a record is complete (length written), so every record below it is fully written. Only
     * the append that reserved the record at this LSN advances it (see {@link #publish}), and a switch.
     */
    private final WalPublication publication;
    private volatile long firstSegmentIndex; // deleteLock
    private volatile long bytesWritten; // appendLock
    private final AtomicReference<StorageException> failure = new AtomicReference<>();
    private final BooleanSupplier failed = () -> failure.get() != null;
    private volatile boolean closed;

    private Wal(WalOpenScan scan, WalSegment last, int endOffset, Duration flushFrequency, boolean withCopy) {
        this.dir = scan.dir;
        this.io = scan.io;
        this.segmentSize = scan.segmentSize;
        this.mode = scan.mode;
        this.maxPayloadBytes = WalSegmentDescriptor.maxPayloadBytes(segmentSize);
        this.tailCut = scan.tailCut;
        this.currentIndex = last.index;
        this.endOffset = endOffset;
        this.firstSegmentIndex = scan.empty ? 0 : scan.firstIndex;
        this.publication = new WalPublication(WalSegmentDescriptor.endLsn(last.index, endOffset, segmentSize),
                WalPublication.PARK_NANOS);
        this.reservedEnd = publication.position();
        // what a crashed process left in the page cache may not be durable yet
        last.forceOpened(endOffset);
        this.staging = mode == WalSyncMode.FSYNC ? WalSegment.stagingBuffer(segmentSize) : null;
        this.current = staging == null ? last : last.staged(staging, endOffset);
        this.groupCommit = new WalGroupCommit(publication.position(), mode == WalSyncMode.FSYNC);
        this.flusher = mode == WalSyncMode.BACKGROUND ? new WalBackgroundFlusher(this, flushFrequency) : null;
        this.preparer = new WalSegmentPreparer(io, dir, segmentSize, mode, withCopy, scan.storeId, "varve-wal-preparer" + StoreThreads.suffix());
        this.closer = new WalSegmentCloser(io, dir, "varve-wal-closer" + StoreThreads.suffix(), this::fail, this::retire);
        this.forcer = new WalForcer(segmentSize, publication, groupCommit, closer, current, this::checkWritable,
                this::fail);
    }

    /**
     * Opens the WAL in {@code dir} (created if missing), cutting a torn tail (see {@link #tailCut()}), positioned
     * after the last good record; damage is refused (see {@link WalOpenScan}).
     *
     * @param segmentSize    bytes per segment file: a multiple of 4096 in [64 KiB, 1 GiB]; must match an existing WAL
     * @param flushFrequency period of the background fsync in {@link WalSyncMode#BACKGROUND}, ignored otherwise
     */
    public static Wal open(Path dir, FileIOFactory io, long segmentSize, WalSyncMode mode, Duration flushFrequency) {
        Objects.requireNonNull(dir, "dir");
        Objects.requireNonNull(io, "io");
        Objects.requireNonNull(mode, "mode");
        return open(WalOpenScan.run(io, dir, segmentSize, mode, -1, false), flushFrequency);
    }

    /**
     * Carries out what {@code scan} decided — deletes leftover segments and those after a cut, zeroes the cut tail —
     * and opens the WAL for appending. Call once the store as a whole is known to be sound: this is the first write.
     *
     * @param flushFrequency period of the background fsync in {@link WalSyncMode#BACKGROUND}, ignored otherwise
     */
    public static Wal open(WalOpenScan scan, Duration flushFrequency) {
        return open(scan, flushFrequency, Agents.dedicated());
    }

    /**
     * As {@link #open(WalOpenScan, Duration)}, with the background flusher started by {@code agents} (stepped by
     * hand when they are {@link Agents#invoked}).
     */
    public static Wal open(WalOpenScan scan, Duration flushFrequency, Agents agents) {
        return open(scan, flushFrequency, agents, false);
    }

    /**
     * As {@link #open(WalOpenScan, Duration, Agents)}; {@code inMemoryOnly} says the files are an overlay nothing is
     * written back from (a read-only open): the newest segment is then continued even when another mode wrote it,
     * since no record appended here reaches the disk (see {@link WalOpenSwitch}); a full one is still followed by
     * its successor.
     */
    public static Wal open(WalOpenScan scan, Duration flushFrequency, Agents agents, boolean inMemoryOnly) {
        Objects.requireNonNull(agents, "agents");
        if (scan.mode == WalSyncMode.BACKGROUND && (flushFrequency == null || flushFrequency.isNegative()
                || flushFrequency.isZero())) {
            throw new IllegalArgumentException("BACKGROUND WAL sync needs a positive flush frequency, was "
                    + flushFrequency);
        }
        boolean withCopy = !inMemoryOnly && scan.mode != WalSyncMode.FSYNC;
        WalSegment last = scan.carryOut(withCopy);
        try {
            int endOffset = scan.endOffset;
            if (WalOpenSwitch.needed(last, endOffset, scan.mode, inMemoryOnly)) {
                last = WalOpenSwitch.startNext(scan.io, scan.dir, last, endOffset, scan.mode, scan.storeId, withCopy);
                endOffset = HEADER_SIZE;
            }
            Wal wal = new Wal(scan, last, endOffset, flushFrequency, withCopy);
            if (wal.flusher != null) wal.flusher.start(agents);
            return wal;
        } catch (RuntimeException | Error e) { // the flusher's thread refused too: the open that failed keeps no file
            WalSegment.closeQuietly(last);
            throw e;
        }
    }

    /**
     * Appends a record and returns its LSN. Copies {@code payload}'s remaining bytes (its position is not changed).
     * The record survives a process crash once this returns; see {@link #commit} for power loss.
     *
     * @param type 1..255, opaque to the WAL
     * @throws IllegalArgumentException when the record cannot fit in a segment (nothing is written)
     * @throws StorageException         on an IO failure now or earlier
     * @throws IllegalStateException    after {@link #close()}
     */
    public long append(int type, ByteBuffer payload) {
        if (type < 1 || type >= WalSegmentDescriptor.SEAL_TYPE) {
            throw new IllegalArgumentException("WAL record type must be in [1, " + (WalSegmentDescriptor.SEAL_TYPE - 1)
                    + "], was " + type);
        }
        int payloadBytes = payload.remaining();
        if (payloadBytes > maxPayloadBytes) {
            throw new IllegalArgumentException("WAL record of " + ((long) payloadBytes + RECORD_HEADER_SIZE)
                    + " bytes (payload " + payloadBytes + ") exceeds the limit of " + (maxPayloadBytes + RECORD_HEADER_SIZE)
                    + " bytes (payload " + maxPayloadBytes + ") for a WAL segment of " + segmentSize
                    + " bytes; raise walSegmentSize");
        }
        int length = recordBytes(payloadBytes);
        WalSegment seg;
        int off;
        long end;
        appendLock.lock();
        try {
            checkWritable();
            if (endOffset + WalSegmentDescriptor.aligned(length) + WalSegmentDescriptor.SEAL_BYTES > segmentSize) {
                switchSegment();
            }
            seg = current;
            off = endOffset;
            endOffset = off + WalSegmentDescriptor.aligned(length);
            end = WalSegmentDescriptor.endLsn(seg.index, endOffset, segmentSize);
            reservedEnd = end;
            bytesWritten += length;
            if (endOffset > segmentSize / WalSegmentPreparer.BEGIN_PAST_PART && preparing != seg.index + 1) {
                preparing = seg.index + 1;
                preparer.prepareAhead(preparing);
            }
        } finally {
            appendLock.unlock();
        }
        long lsn = WalSegmentDescriptor.lsn(seg.index, off, segmentSize);
        writeBody(seg, off, lsn, type, payload, payloadBytes);
        publish(seg, off, lsn, length, end);
        return lsn;
    }

    /** Writes a reserved record's body and CRC at {@code off} of {@code seg}, everything but its length. */
    private void writeBody(WalSegment seg, int off, long lsn, int type, ByteBuffer payload, int payloadBytes) {
        try {
            WalSegmentDescriptor.putBody(seg.buffer, off, lsn, type, payload, payloadBytes);
        } catch (InternalError e) {
            // a fault on a mapped store (the file shrank or the device failed) is an IO error
            throw fail(new StorageException("cannot write WAL record at offset " + off, seg.path, new IOException(e)));
        }
    }

    /**
     * Writes the record's length, in LSN order: waits until every earlier record is published (they were reserved
     * earlier and are being copied by other writers), then publishes this one and moves the position past it.
     */
    private void publish(WalSegment seg, int off, long lsn, int length, long end) {
        if (!awaitPublished(lsn)) throw refused();
        WalSegmentDescriptor.putLengthRelease(seg.buffer, off, length);
        publication.advance(end);
    }

    /**
     * Waits until every record reserved before {@code lsn} is published. False when the WAL failed meanwhile (a writer
     * before us may never publish its record).
     */
    private boolean awaitPublished(long lsn) {
        return publication.await(lsn, failed);
    }

    /**
     * Returns once the record at {@code lsn} is as durable as the sync mode promises: in {@link WalSyncMode#FSYNC}
     * forced to disk (group commit), otherwise at once (the mapped store already survives a process crash).
     */
    public void commit(long lsn) {
        long position = publication.position();
        if (lsn >= position) {
            throw new IllegalArgumentException("LSN " + lsn + " was not appended (WAL position " + position + ")");
        }
        if (mode != WalSyncMode.FSYNC || lsn < groupCommit.durableLsn()) return;
        groupCommit.await(lsn + 1, forcer::forceAppended);
    }

    /** Makes every record appended so far durable (I1: the checkpointer calls this before writing pages). */
    public void force() {
        if (closed) throw new IllegalStateException("WAL " + dir + " is closed");
        if (failure.get() != null) throw refused();
        groupCommit.await(publication.position(), forcer::forceAppended);
    }

    /**
     * Seals the old segment (a record naming its successor, whose file exists under its temporary name) and moves
     * appending to the next one, which gets its name once the old one, seal included, is durable: a segment's name
     * proves the earlier ones durable and sealed. Under FSYNC the switch forces and names itself (commits left little to
     * force); a mapped segment leaves both to the closer, and writers go on meanwhile. Holds appendLock.
     */
    private void switchSegment() {
        if (!awaitPublished(reservedEnd)) throw refused(); // the old segment's records are whole before it is forced and sealed
        WalSegment old = current;
        WalSegment next;
        try {
            closer.finish(); // the switch before this one is done: its segment is named and this one's start durable
            next = preparer.take(old.index + 1); // under its temporary name: the seal may name it, it proves nothing yet
            int sealAt = endOffset;
            int sealLength = RECORD_HEADER_SIZE + Long.BYTES;
            writeBody(old, sealAt, WalSegmentDescriptor.lsn(old.index, sealAt, segmentSize), WalSegmentDescriptor.SEAL_TYPE,
                    WalSegmentDescriptor.sealPayload(next.index), Long.BYTES);
            WalSegmentDescriptor.putLengthRelease(old.buffer, sealAt, sealLength);
            endOffset = sealAt + WalSegmentDescriptor.aligned(sealLength);
        } catch (StorageException e) {
            throw fail(e);
        }
        if (staging == null) {
            // a force that sees the next segment current finishes this first (closer.finish), so it is begun before;
            // an msync writes nothing over the bytes a running force made durable, so a stale start does no harm
            closer.begin(old, forcer.notYetDurable(old), endOffset, next);
            makeCurrent(next);
        } else {
            // Under the force lock: a group commit's force may be running on this segment, writing its range from
            // the staging buffer, which the next segment takes over below; and this force starts where the last one
            // ended, so it writes only what no force has made durable.
            groupCommit.lock();
            try {
                old.force(forcer.notYetDurable(old), endOffset); // nothing was written past the seal
                next.name(io, dir);
                // the old segment is sealed and forced, and no force is running: the buffer is free for the next segment
                next = next.staged(staging, HEADER_SIZE);
                groupCommit.durableUpTo(WalSegmentDescriptor.firstLsn(next.index, segmentSize)); // a mapped one's is once the closer forced it
                makeCurrent(next);
            } catch (StorageException e) {
                throw fail(e);
            } finally {
                groupCommit.unlock();
            }
            WalSegment.closeQuietly(old); // its records stay readable through readers' own mappings
        }
        endOffset = HEADER_SIZE;
    }

    /** The closer made {@code old} whole under its name: it is closed once no force reads it ({@link WalForcer#retire}). */
    private void retire(WalSegment old) {
        forcer.retire(old);
    }

    /** Appending moves to {@code next}: the position moves to its first LSN, which its first record waits for in publish. */
    private void makeCurrent(WalSegment next) {
        current = next;
        currentIndex = next.index;
        forcer.makeCurrent(next);
        reservedEnd = WalSegmentDescriptor.firstLsn(next.index, segmentSize);
    }

    /**
     * Reads records from {@code fromLsn} (a record's LSN, a reader's {@code nextLsn}, or {@link #position()}) up to
     * the current position; under FSYNC those records are forced first. Close the reader when done.
     */
    public WalReader read(long fromLsn) {
        long end = publication.position();
        // a staged segment's records reach its file when they are forced, and readers read the files (a failed or
        // closed WAL forces nothing more: what reached the files is what there is to read)
        if (staging != null && groupCommit.durableLsn() < end && !closed && failure.get() == null) {
            groupCommit.await(end, forcer::forceAppended);
        }
        if (fromLsn > end || fromLsn < 0) {
            throw new IllegalArgumentException("cannot read the WAL from LSN " + fromLsn + ": beyond its end " + end);
        }
        long first = firstSegmentIndex;
        long index = WalSegmentDescriptor.segmentIndex(fromLsn, segmentSize);
        if (index < first) {
            throw new IllegalArgumentException("cannot read the WAL from LSN " + fromLsn + ": its segment "
                    + WalSegmentDescriptor.fileName(index) + " was deleted (oldest kept: "
                    + WalSegmentDescriptor.fileName(first) + ")");
        }
        return new WalReader(io, dir, segmentSize, fromLsn, end);
    }

    /**
     * Deletes the segment files lying entirely before {@code lsn}'s segment (never the segment being written). Call
     * once no recovery can need records before {@code lsn}.
     */
    public void deleteSegmentsBefore(long lsn) {
        long position = publication.position();
        if (lsn > position) {
            throw new IllegalArgumentException("LSN " + lsn + " is beyond the WAL position " + position);
        }
        long upTo = Math.min(WalSegmentDescriptor.segmentIndex(lsn, segmentSize), currentIndex);
        closer.finish(); // the newest segment has its name before older ones go: open needs a named segment
        synchronized (deleteLock) {
            // oldest first: a crash leaves a contiguous set (or a gap that open cleans up)
            for (long i = firstSegmentIndex; i < upTo; i++) {
                Path path = dir.resolve(WalSegmentDescriptor.fileName(i));
                try {
                    io.delete(path);
                } catch (IOException e) {
                    throw new StorageException("cannot delete WAL segment", path, e);
                }
                firstSegmentIndex = i + 1;
            }
        }
    }

    /**
     * The store's id {@code id} is durable in a checkpoint marker: segments created from now on record it (see
     * {@link WalSegmentDescriptor}, store tag), and a segment prepared ahead before is stamped with it when taken.
     * Those created before record 0, which any store accepts: until a marker holds the id, a crash makes the next
     * open pick another.
     */
    public void storeIdDurable(long id) {
        preparer.storeIdDurable(id);
    }

    /** The LSN the next record will be written at (or, if it does not fit, the next segment's first LSN). */
    public long position() {
        return publication.position();
    }

    /** Every record below this LSN is durable against power loss. */
    public long durableLsn() {
        return groupCommit.durableLsn();
    }

    /** Record bytes (headers included, alignment padding not) appended since open. */
    public long bytesWritten() {
        return bytesWritten;
    }

    /** What {@link #bytesWritten} grows by when a record of {@code payloadBytes} is appended. */
    public static int recordBytes(int payloadBytes) {
        return RECORD_HEADER_SIZE + payloadBytes;
    }

    /** The first LSN of the oldest segment kept. */
    public long firstLsn() {
        return WalSegmentDescriptor.firstLsn(firstSegmentIndex, segmentSize);
    }

    /** Largest payload one record can carry. */
    public int maxPayloadBytes() {
        return maxPayloadBytes;
    }

    /** What {@link #open} cut off a torn or corrupt tail, empty when the WAL was clean. */
    public Optional<WalTailCut> tailCut() {
        return Optional.ofNullable(tailCut);
    }

    /** True when the next segment's file is prepared (see {@link WalSegmentPreparer}) and waits for the switch. */
    boolean nextSegmentReady() {
        return preparer.ready(currentIndex + 1);
    }

    /** The test seam for the threads the OS may refuse: the ones that prepare and finish segment switches. */
    void threadFactory(java.util.concurrent.ThreadFactory threads) {
        preparer.threads = threads;
        closer.threads = threads;
    }

    /** The failure that stopped this WAL, or null. */
    public StorageException failure() {
        return failure.get();
    }

    /** Forces everything appended (unless the WAL failed) and closes the files. Idempotent. */
    @Override
    public void close() {
        if (flusher != null) flusher.close();
        preparer.close();
        appendLock.lock();
        try {
            if (closed) return;
            awaitPublished(reservedEnd); // appends in flight finish before the unmap (or the WAL failed)
            groupCommit.lock();
            try {
                if (failure.get() == null) {
                    groupCommit.durableUpTo(forcer.forceAppended());
                    closer.finish(); // the segment is named before its durable copy takes the name
                    current.installCopyAtClose(io, dir, endOffset);
                }
                closed = true;
            } catch (StorageException e) {
                throw fail(e);
            } finally {
                closer.finishQuietly(); // after a failure, the closer may still be using the old segment
                forcer.closeRetired();
                current.retire(); // closes it; truncates the file a copy replaced
                groupCommit.unlock();
            }
        } finally {
            appendLock.unlock();
        }
    }

    /**
     * Stops the WAL's background file work — a segment being prepared ahead (its file deleted), a switch's second half
     * (finished) — and waits for it, forcing nothing else: after a store is halted (a crash drill), nothing of it
     * changes the directory any more. The WAL is left as it is, not closed.
     */
    public void halt() {
        preparer.close();
        closer.finishQuietly();
    }

    private void checkWritable() {
        if (closed) throw new IllegalStateException("WAL " + dir + " is closed");
        if (failure.get() != null) throw refused();
    }

    private StorageException refused() {
        StorageException f = failure.get();
        return new StorageException("the WAL failed earlier and refuses further work: " + f.getMessage(), f.file(), f);
    }

    /** Records the first failure; returns {@code e} for the caller to throw. */
    private StorageException fail(StorageException e) {
        failure.compareAndSet(null, e);
        return e;
    }

    @Override
    public String toString() {
        return "Wal[" + dir + ", " + mode + ", position " + publication.position() + "]";
    }
}
