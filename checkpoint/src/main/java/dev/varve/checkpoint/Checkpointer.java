package dev.varve.checkpoint;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.StorageException;
import dev.varve.core.memory.Frame;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.page.Page;
import dev.varve.core.spi.CheckpointListener;
import dev.varve.core.spi.RecordTypes;
import dev.varve.core.wal.Wal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;
import java.util.function.ToLongFunction;

/**
 * Writes dirty pages to the page files so that the store sits exactly at a WAL mark (I2), in the seven steps of
 * DESIGN.md: (1) under the checkpoint write lock, the mark and the dirty set (a swap of lists: each page becomes the
 * checkpoint's just after, see {@code PageMemory.markCheckpoint}); (2) writers copy-on-write pages they change before
 * they are written; (3) recovery files, unless every change since the previous mark was logged physically;
 * (4) listeners (snapshot archive, I4); (5) start marker; (6) pages, sorted, in parallel, fsync per file; (7) end
 * marker, then old markers, recovery files and WAL segments go. The writes of (3) and (6) are {@link
 * CheckpointPageWriter}'s.
 *
 * <p>Triggers (background thread, {@link CheckpointTrigger}): the period, the dirty-page ratio, WAL volume since
 * the last mark, memory pressure and explicit requests. Recovery and shutdown call {@link #checkpoint} directly.
 * One checkpoint at a time. A failed checkpoint poisons the checkpointer: the store must be reopened (recovery
 * then repairs what it left).
 */
public final class Checkpointer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Checkpointer.class);

    private final PageMemory memory;
    private final Wal wal;
    private final CheckpointMarkers markers;
    private final ReadWriteLock checkpointLock;
    private final PageCodec codec;
    private final PhysicalPageLog physicalLog;
    private final Throttle throttle;
    private final CheckpointPool pool;
    private final CheckpointPageWriter pageWriter;
    private final CheckpointTrigger trigger;
    private final Agents agents;
    private final List<CheckpointListener> listeners = new CopyOnWriteArrayList<>();
    private final ReentrantLock running = new ReentrantLock();

    // guarded by running
    private long lastId;
    private long lastMarkLsn;
    private volatile long walBytesAtLastMark; // read by the trigger thread
    /**
     * WAL bytes the last checkpoint appended past its own mark: its witness ({@code CHECKPOINT_STARTED}), or 0. When
     * no other byte was appended since, and no page is dirty, the store is idle: another checkpoint would only move
     * the mark past that witness, which recovery reads as nothing to do, at the cost of two markers and their fsyncs.
     */
    private long witnessBytesPastMark;
    private boolean physicalSinceLastMark;
    private PageFileGenerations generations = PageFileGenerations.fresh();
    private volatile IntSupplier largestValue = () -> CheckpointMarker.LARGEST_VALUE_UNKNOWN;
    /** Files a restore of the interrupted checkpoint wrote and stamped so far. */
    private final Set<Integer> restoredFiles = ConcurrentHashMap.newKeySet();

    private volatile CheckpointStats last = CheckpointStats.NONE;
    private volatile long completed;
    private volatile long pagesWritten;
    private volatile long recoveryFileBytes;
    private volatile Throwable failure;

    /**
     * A checkpointer for {@code memory}. Writers must hold {@code checkpointLock}'s read lock for the whole
     * append-and-apply of one operation. {@code unusedRange} tells SKIP_GARBAGE and the physical page log the unused middle of a page.
     */
    public Checkpointer(VarveConfig config, PageMemory memory, Wal wal, CheckpointMarkers markers,
                        ReadWriteLock checkpointLock, ToLongFunction<Page> unusedRange) {
        this(config, memory, wal, markers, checkpointLock, unusedRange, Agents.dedicated());
    }

    /**
     * As the constructor above, with the trigger started by {@code agents} at {@link #start}; when they are
     * {@link Agents#invoked} the checkpoint's writes also stay on the thread that runs it.
     */
    public Checkpointer(VarveConfig config, PageMemory memory, Wal wal, CheckpointMarkers markers,
                        ReadWriteLock checkpointLock, ToLongFunction<Page> unusedRange, Agents agents) {
        this.agents = Objects.requireNonNull(agents, "agents");
        this.memory = memory;
        this.wal = wal;
        this.markers = markers;
        this.checkpointLock = checkpointLock;
        this.codec = PageCodec.of(config.recoveryCompression());
        this.throttle = new Throttle(memory, this::checkUsable); // writers waiting for room learn of a failed checkpoint at once
        this.pool = new CheckpointPool(config.checkpointThreads(), agents.parallel());
        this.pageWriter = new CheckpointPageWriter(memory, markers, codec, unusedRange, pool, throttle, e -> {
            if (failure == null) failure = e;
        });
        this.physicalLog = config.recoveryMode() == RecoveryMode.WAL_PHYSICAL ? new PhysicalPageLog(wal, memory.pageSize(), unusedRange, codec) : null;
        if (physicalLog != null) memory.addWriteHook(physicalLog);
        this.trigger = new CheckpointTrigger(this, config, memory);
        // a wait for a clean page or a checkpoint-buffer slot: once the checkpointer has failed none will come (the
        // failed checkpoint hands its pages back dirty, and no other runs until the store is reopened), so the waiter
        // fails at once, naming the failure, instead of waiting out page memory's limit; and one that holds latches of
        // the failed checkpoint's pages lets go of them, which that checkpoint's hand-back waits for
        memory.onPressure(() -> {
            checkUsable();
            trigger.wake("memory pressure");
        });
    }

    /** The store id and page file generations open loaded (and checked); call before recovery. */
    public void useGenerations(PageFileGenerations g) {
        running.lock();
        try {
            generations = Objects.requireNonNull(g);
        } finally {
            running.unlock();
        }
    }

    /**
     * What each marker records as the largest value ({@link CheckpointMarker#largestValue}): the store's high-water
     * mark of value sizes, which never falls; read after the mark, so it covers every value the checkpoint writes.
     */
    public void recordLargestValue(IntSupplier largest) {
        largestValue = Objects.requireNonNull(largest);
    }

    /** Where recovery left the store: the last complete checkpoint. */
    public void resumeAfter(long checkpointId, long markLsn) {
        running.lock();
        try {
            lastId = checkpointId;
            lastMarkLsn = markLsn;
            walBytesAtLastMark = wal.bytesWritten();
            witnessBytesPastMark = 0;
        } finally {
            running.unlock();
        }
    }

    /**
     * Starts the physical page log (WAL_PHYSICAL mode) and the background trigger; call after recovery, before any
     * write. When recovery's final checkpoint left nothing dirty, every change since its mark is logged physically
     * from here, and the next checkpoint can rely on the WAL instead of recovery files; when recovery left replayed
     * pages dirty (its checkpoint runs in the background), those pages have no physical record, so the next
     * checkpoint writes recovery files.
     */
    public void start() {
        running.lock();
        try {
            if (physicalLog != null) {
                physicalLog.enabled(true);
                physicalSinceLastMark = memory.heldPages() == 0;
            }
        } finally {
            running.unlock();
        }
        trigger.start(agents);
    }

    /** Adds a protocol listener (the snapshot layer). */
    public void addListener(CheckpointListener l) {
        listeners.add(l);
    }

    /** Writer throttling and head-room. */
    public Throttle throttle() {
        return throttle;
    }

    /** Asks the background thread for a checkpoint that starts after this call. */
    public CompletableFuture<CheckpointStats> request(String reason) {
        Throwable f = failure;
        if (f != null) return CompletableFuture.failedFuture(new StorageException("the checkpointer failed earlier: " + f, null, f));
        return trigger.request(reason);
    }

    /** Runs a checkpoint now on the calling thread, with the mark the current WAL position. */
    public CheckpointStats checkpoint(String reason) {
        return checkpoint(reason, wal::position);
    }

    /**
     * Runs a checkpoint on the calling thread; {@code mark} gives the mark LSN under the lock (recovery passes its
     * replay position: every record before it is applied).
     */
    public CheckpointStats checkpoint(String reason, LongSupplier mark) {
        running.lock();
        try {
            checkUsable();
            return run(reason, mark);
        } catch (RuntimeException | Error e) {
            if (failure == null) failure = e;
            LOG.error("checkpoint failed; the store refuses further checkpoints until reopened", e);
            throw e;
        } finally {
            running.unlock();
        }
    }

    private CheckpointStats run(String reason, LongSupplier markSupplier) {
        long t0 = System.nanoTime();
        long throttledBefore = throttle.throttledNanos();
        long cowBefore = memory.copyOnWritePages();
        long mark;
        long walBytesAtMark;
        List<Frame> pages;
        boolean covered;
        long lockStart = System.nanoTime();
        checkpointLock.writeLock().lock();
        try {
            // again under the lock: a writer whose logged change failed half-way refused further checkpoints while it
            // held the lock's other side, which this checkpoint may have been waiting for since its first check
            checkUsable();
            mark = markSupplier.getAsLong();
            walBytesAtMark = wal.bytesWritten();
            memory.markCheckpoint();
            for (CheckpointListener l : listeners) l.onMark(lastId + 1, mark);
            covered = physicalLog != null && physicalLog.enabled() && physicalSinceLastMark;
            if (physicalLog != null) {
                physicalLog.nextGeneration();
                physicalSinceLastMark = physicalLog.enabled();
            }
        } finally {
            checkpointLock.writeLock().unlock();
        }
        long lockHold = System.nanoTime() - lockStart;
        pages = memory.markedPages(); // first: an abandoned checkpoint hands these back
        if (pages.isEmpty() && (mark == lastMarkLsn || walBytesAtMark - walBytesAtLastMark == witnessBytesPastMark)) {
            if (lastId > 0) for (CheckpointListener l : listeners) l.whileIdle(lastId, lastMarkLsn);
            return last;
        }
        pages.sort(Comparator.comparingLong(Frame::heldPageId)); // by file and index; outside the lock, writers are running again
        long id = lastId + 1;
        throttle.begin(pages.size(), !covered);
        try {
            wal.force(); // I1: the records that produced these page versions are durable before any of them is written
            long rd0 = System.nanoTime();
            CheckpointPageWriter.RecoveryFiles files = covered ? CheckpointPageWriter.RecoveryFiles.NONE : pageWriter.writeRecoveryFiles(id, pages);
            long recoveryNanos = System.nanoTime() - rd0;
            for (CheckpointListener l : listeners) l.beforeStartMarker(id, mark);
            markers.write(new CheckpointMarker(CheckpointMarker.START, id, mark, lastMarkLsn,
                    covered ? CheckpointMarker.PHYSICAL_WAL : CheckpointMarker.RECOVERY_FILES, codec.ordinal(), files.entries(), files.bytes(),
                    generations.storeId(), null, largestValue.getAsInt()));
            storeIdDurable(); // in the start marker: page files and WAL segments may carry it now
            // the WAL witnesses that pages of this checkpoint may reach the page files (a lost start marker is named);
            // a checkpoint with no page to write needs no witness and costs the WAL nothing
            int witnessBytes = 0;
            if (!pages.isEmpty()) {
                ByteBuffer witness = RecordTypes.checkpointStarted(id);
                witnessBytes = Wal.recordBytes(witness.remaining());
                wal.append(RecordTypes.CHECKPOINT_STARTED, witness);
                wal.force();
            }
            long w0 = System.nanoTime();
            Set<Integer> touched = pageWriter.writePages(pages);
            long pageWriteNanos = System.nanoTime() - w0;
            long f0 = System.nanoTime();
            Set<Integer> stamped = stampAndForce(touched, id);
            long fsyncNanos = System.nanoTime() - f0;
            writeEnd(id, mark, lastMarkLsn, stamped);
            for (CheckpointListener l : listeners) l.afterEndMarker(id, mark);
            markers.deleteBefore(id);
            wal.deleteSegmentsBefore(mark);
            long walBytes = walBytesAtMark - walBytesAtLastMark;
            lastId = id;
            lastMarkLsn = mark;
            walBytesAtLastMark = walBytesAtMark;
            witnessBytesPastMark = witnessBytes;
            CheckpointStats s = new CheckpointStats(id, reason, pages.size(), covered ? "physical wal" : "recovery files", files.total(),
                    covered ? 0 : recoveryNanos, pageWriteNanos, fsyncNanos, lockHold, System.nanoTime() - t0,
                    memory.copyOnWritePages() - cowBefore, throttle.throttledNanos() - throttledBefore, walBytes);
            completed++;
            pagesWritten += pages.size();
            recoveryFileBytes += files.total();
            last = s;
            LOG.info("{}", s);
            return s;
        } catch (RuntimeException | Error e) {
            if (failure == null) failure = e; // first, so that writers waiting for its slots fail (see onPressure above)
            memory.abandonCheckpoint(pages);
            throw e;
        } finally {
            throttle.end();
        }
    }

    /**
     * Binary restore from physical WAL records left the restored pages dirty in memory: writes them, fsyncs, and
     * writes the end marker of the interrupted checkpoint {@code start}, whose mark the store now sits at.
     */
    public void finishRestore(CheckpointMarker start) {
        finishRestore(start, Set.of());
    }

    /**
     * As {@link #finishRestore(CheckpointMarker)}, after the restore also wrote, stamped with {@code start}'s id and
     * fsynced {@code stampedFiles} itself (from recovery files): the end marker lists them.
     */
    public void finishRestore(CheckpointMarker start, Set<Integer> stampedFiles) {
        running.lock();
        try {
            writeRestoredPages(start.id());
            restoredFiles.addAll(stampedFiles);
            writeEnd(start.id(), start.markLsn(), start.prevMarkLsn(), restoredFiles);
            restoredFiles.clear();
            markers.deleteBefore(start.id());
            lastId = start.id();
            lastMarkLsn = start.markLsn();
            walBytesAtLastMark = wal.bytesWritten();
            witnessBytesPastMark = 0;
        } finally {
            running.unlock();
        }
    }

    /**
     * Binary restore from physical WAL records filled the data region with restored pages (dirty, which nothing else
     * evicts while the store opens, so the restore would wait for a clean page in vain): writes and fsyncs the pages
     * restored so far, which may then be evicted, and lets the restore go on. The page files then hold states from
     * before the interrupted checkpoint's mark, which is safe: until {@link #finishRestore} writes its end marker, a
     * crash restores again from the same records, and every page's first record after the previous mark is a whole
     * image (or, for a new page, a rebuild of all its bytes), so nothing in the restore reads what is written here
     * before its own record sets it again.
     */
    public void flushRestored(CheckpointMarker start) {
        running.lock();
        try {
            writeRestoredPages(start.id());
        } finally {
            running.unlock();
        }
    }

    /**
     * Writes and fsyncs every dirty page (the restore's of checkpoint {@code id}), as a checkpoint without markers;
     * the caller holds {@code running}.
     */
    private void writeRestoredPages(long id) {
        checkpointLock.writeLock().lock();
        try {
            memory.markCheckpoint();
        } finally {
            checkpointLock.writeLock().unlock();
        }
        List<Frame> pages = memory.markedPages();
        pages.sort(Comparator.comparingLong(Frame::heldPageId));
        restoredFiles.addAll(stampAndForce(pageWriter.writePages(pages), id));
    }

    /**
     * Stamps each written file with checkpoint {@code id} (one small write into its header) and fsyncs it, in
     * parallel; returns the files stamped (none while the store id is not yet durable in a marker).
     */
    private Set<Integer> stampAndForce(Set<Integer> touched, long id) {
        Set<Integer> stamped = ConcurrentHashMap.newKeySet();
        pool.forEach(new ArrayList<>(touched), fileId -> {
            if (memory.store().stampGeneration(fileId, id)) stamped.add(fileId);
            memory.store().force(fileId);
        });
        return stamped;
    }

    /** Writes checkpoint {@code id}'s end marker, with the store id and the generations after it wrote {@code stamped}. */
    private void writeEnd(long id, long mark, long prevMark, Set<Integer> stamped) {
        Map<Integer, Long> next = generations.after(id, stamped);
        markers.write(new CheckpointMarker(CheckpointMarker.END, id, mark, prevMark, CheckpointMarker.NO_RECOVERY_DATA, 0, new int[0], new long[0],
                generations.storeId(), next, largestValue.getAsInt()));
        generations.commit(next);
        storeIdDurable();
    }

    /** A marker holds the store's id: the files made from now on — page files, WAL segments, the listeners' — record it. */
    private void storeIdDurable() {
        memory.store().storeIdDurable(generations.storeId());
        wal.storeIdDurable(generations.storeId());
        for (CheckpointListener l : listeners) l.storeIdDurable(generations.storeId());
    }

    private void checkUsable() {
        Throwable f = failure;
        if (f != null) throw new StorageException("the checkpointer failed earlier (" + f + "); reopen the store to recover", null, f);
    }

    /**
     * Page memory went behind the WAL (a logged write failed half-way): no checkpoint may start from now on, as it
     * would make the half-made change durable past its record; recovery replays from the last mark instead. A
     * checkpoint already running writes only images of its mark, from before the change.
     */
    public void refuseFurther(Throwable cause) {
        if (failure == null) failure = cause;
    }

    /** The failure that stopped the checkpointer, or null. */
    public Throwable failure() {
        return failure;
    }

    /** Figures of the last checkpoint. */
    public CheckpointStats last() {
        return last;
    }

    /** Checkpoints completed since open. */
    public long completed() {
        return completed;
    }

    /** Pages written by checkpoints since open. */
    public long pagesWritten() {
        return pagesWritten;
    }

    /** Recovery-file bytes written since open. */
    public long recoveryFileBytes() {
        return recoveryFileBytes;
    }

    /** WAL bytes written since the last checkpoint's mark (for the WAL-volume trigger). */
    long walBytesSinceMark() {
        return wal.bytesWritten() - walBytesAtLastMark;
    }

    /** Stops the background trigger (pending requests fail); {@link #checkpoint} still works, e.g. at shutdown. */
    public void stop() {
        trigger.close();
    }

    /** Stops the trigger and the checkpoint threads; does not checkpoint. */
    @Override
    public void close() {
        trigger.close();
        pool.close();
    }
}
