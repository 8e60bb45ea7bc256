package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.memory.Frame;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.memory.PageSlots;
import dev.varve.core.spi.CheckpointListener;
import dev.varve.config.RankTreePolicy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The split-snapshot archive (Retro): Pagelog, Maplog with Skippy levels, Start(v) in the snapshot log, and
 * SavedAfter in page headers; the capture path, the archiver, and the snapshot page tables of open views.
 *
 * <p>Design note. A capture is numbered when it is taken; the archiver writes captures in that order, so a
 * capture's number is both its Pagelog address and its Maplog position, and Start(v) is the number of the next
 * capture at v's declaration. At each checkpoint mark the archive notes the capture number; before the
 * checkpoint's start marker it makes every capture up to there durable, Pagelog before Maplog before Start (I4,
 * I5), and records (mark, capture number). Recovery cuts the archive back to the recovered mark; logical replay
 * from that mark re-declares the later snapshots from their snaprecs and re-captures their pre-states —
 * deterministically (I6), so nothing is captured twice.
 *
 * <p>One lock guards capture numbering, the pending queue, declarations and the views' tables; page images are
 * copied and written outside it.
 */
public final class SnapshotArchive implements CheckpointListener, AutoCloseable {
    private static final long WAIT_LIMIT_NANOS = TimeUnit.SECONDS.toNanos(120);
    /** Captures the archiver writes with one Pagelog write. */
    private static final int ARCHIVE_BATCH = 256;

    private final int pageSize;
    private final Pagelog pagelog;
    private final Skippy skippy;
    private final SnapshotLog snapshotLog;
    private final MaplogFile marks;
    private final MaplogFile drops;
    private final RankTree rankTree;
    private final PageSlots slots;
    private final Capture capture;
    private final Archiver archiver;
    private final ReentrantLock lock = new ReentrantLock();

    // guarded by lock
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    private final List<SnapshotPageTable> views = new ArrayList<>();
    private final TreeMap<Long, SnapshotRecord> snapshots = new TreeMap<>();
    private final Map<Long, Dropped> dropped = new TreeMap<>();
    private final Map<Long, long[]> capturesPerSnapshot = new HashMap<>();
    private long nextCapture;
    private long markCapture;

    private final java.util.concurrent.atomic.LongAdder captureWaitNanos = new java.util.concurrent.atomic.LongAdder();
    private volatile long latest;
    private volatile long archived;
    private volatile Throwable failure;

    /** A snapshot the retention policy let go: when, and the rules of its levels. */
    public record Dropped(long id, long droppedMillis, String why) {
    }

    /** One captured pre-state on its way to the archive. */
    private record Pending(long number, long pageId, long snapshot, int slot) {
    }

    /** Opens (or creates) the archive in {@code dir}; nothing is captured until {@link #recover} and {@link #start}. */
    public SnapshotArchive(FileIOFactory io, Path dir, int pageSize, int skippyLevels, int skippyNodeEntries, long captureBufferBytes,
                           long segmentBytes, RankTreePolicy retention) {
        this.pageSize = pageSize;
        this.rankTree = new RankTree(retention);
        try {
            io.createDirectories(dir);
            for (Path p : io.list(dir, "")) if (DurableFiles.isTemp(p)) io.delete(p); // creations cut short by a crash
        } catch (IOException e) {
            throw new StorageException("cannot create the archive directory", dir, e);
        }
        this.pagelog = new Pagelog(io, dir, pageSize, segmentBytes);
        this.skippy = new Skippy(io, dir, skippyLevels, skippyNodeEntries);
        this.snapshotLog = new SnapshotLog(io, dir.resolve("snapshots.log"));
        this.marks = new MaplogFile(io, dir.resolve("archive-marks.log"), MaplogFile.KIND_UPLINKS, -1, skippyNodeEntries);
        this.drops = new MaplogFile(io, dir.resolve("drops.log"), MaplogFile.KIND_DROPS, -1, skippyNodeEntries);
        this.slots = new PageSlots(captureBufferBytes, pageSize);
        this.capture = new Capture(this);
        this.archiver = new Archiver(this);
    }

    /** Registers the capture hook with page memory (after any physical-WAL hook, so its deltas see SavedAfter change). */
    public void attach(PageMemory memory) {
        memory.addWriteHook(capture);
    }

    // ---------------------------------------------------------------- recovery

    /**
     * Retro stage 1: cuts the archive back to the recovered checkpoint mark ({@code markLsn}; {@code emptyStore}
     * when no checkpoint ever completed) and turns capture on for logical replay.
     */
    public void recover(long markLsn, boolean emptyStore) {
        long keep = emptyStore ? 0 : captureNumberAt(markLsn);
        if (keep > skippy.size() || keep > pagelog.end())
            throw new CorruptionException("the archive holds " + skippy.size() + " mappings and " + pagelog.end() + " pages but checkpoint mark "
                    + markLsn + " recorded " + keep + " (I5 broken?)", skippy.maplog().path(), 0);
        skippy.truncate(keep);
        pagelog.truncate(keep);
        List<SnapshotRecord> kept = new ArrayList<>();
        for (SnapshotRecord r : snapshotLog.load()) if (r.walLsn() < markLsn && !emptyStore) kept.add(r);
        snapshotLog.truncate(kept.size());
        lock.lock();
        try {
            snapshots.clear();
            capturesPerSnapshot.clear();
            for (SnapshotRecord r : kept) snapshots.put(r.id(), r); // a later record of an id is a rank change
            latest = snapshots.isEmpty() ? 0 : snapshots.lastKey();
            reloadDrops();
            nextCapture = keep;
            archived = keep;
            countCaptures(keep);
        } finally {
            lock.unlock();
        }
        capture.enabled(true);
        archiver.start(); // replay captures too, and its checkpoints wait for the archive
    }

    /**
     * Keeps the drop decisions about snapshots declared before the recovered mark (replay re-decides the rest, and a
     * later id may be a different snapshot), rewriting the drop log to just those.
     */
    private void reloadDrops() {
        long n = drops.count();
        long[] ids = new long[(int) n];
        long[] when = new long[(int) n];
        drops.read(0, (int) n, ids, when, null);
        drops.truncate(0);
        dropped.clear();
        for (int i = 0; i < n; i++) {
            SnapshotRecord r = snapshots.remove(ids[i]);
            if (r == null) continue;
            drops.append(ids[i], when[i], 0);
            dropped.put(ids[i], new Dropped(ids[i], when[i], "rank " + r.rank() + " under the policy then in force"));
        }
        drops.force();
    }

    private long captureNumberAt(long markLsn) {
        long n = marks.count();
        long[] lsn = new long[1];
        long[] number = new long[1];
        for (long i = n - 1; i >= 0; i--) {
            marks.read(i, 1, lsn, number, null);
            if (lsn[0] == markLsn) return number[0];
        }
        throw new CorruptionException("the archive has no record of checkpoint mark " + markLsn, marks.path(), 0);
    }

    private void countCaptures(long n) {
        int chunk = 4096;
        long[] snaps = new long[chunk];
        for (long at = 0; at < n; at += chunk) {
            int k = (int) Math.min(chunk, n - at);
            skippy.maplog().read(at, k, null, snaps, null);
            for (int i = 0; i < k; i++) capturesPerSnapshot.computeIfAbsent(snaps[i], s -> new long[1])[0]++;
        }
    }

    // ---------------------------------------------------------------- declarations

    /** Latest declared snapshot id, 0 when none. */
    public long latest() {
        return latest;
    }

    /** The id the next declaration gets. */
    public long nextId() {
        return latest + 1;
    }

    /**
     * Declares snapshot {@code id} — called with no write in flight (under the checkpoint write lock), right after
     * its snaprec was appended at {@code walLsn}; replay calls it for each snaprec after the recovered mark.
     */
    public void declare(long id, int rank, long declaredMillis, long walLsn) {
        lock.lock();
        try {
            if (id != latest + 1) throw new IllegalStateException("snapshot " + id + " declared after " + latest);
            SnapshotRecord r = new SnapshotRecord(id, rank, declaredMillis, nextCapture, walLsn);
            snapshotLog.append(r);
            snapshots.put(id, r);
            latest = id;
            enforce(declaredMillis);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Lazy ranking: raises live snapshot {@code id} to {@code rank}, logged at {@code walLsn}. Replay calls it
     * again for each rank record after the recovered mark; a snapshot the policy has dropped since stays dropped.
     *
     * @return false when the snapshot is not live
     */
    public boolean rank(long id, int rank, long walLsn) {
        lock.lock();
        try {
            SnapshotRecord r = snapshots.get(id);
            if (r == null) return false;
            if (rank < r.rank()) throw new IllegalArgumentException("snapshot " + id + " has rank " + r.rank() + "; a rank can only be raised, not to " + rank);
            SnapshotRecord raised = new SnapshotRecord(id, rank, r.declaredMillis(), r.start(), walLsn);
            snapshotLog.append(raised);
            snapshots.put(id, raised);
            enforce(System.currentTimeMillis());
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Applies the retention policy now (keepFor rules age); the archiver calls it periodically. */
    public void enforce() {
        lock.lock();
        try {
            enforce(System.currentTimeMillis());
        } finally {
            lock.unlock();
        }
    }

    private void enforce(long nowMillis) {
        for (RankTree.Verdict v : rankTree.drops(snapshots.values(), nowMillis)) {
            snapshots.remove(v.id());
            long when = System.currentTimeMillis();
            drops.append(v.id(), when, 0);
            dropped.put(v.id(), new Dropped(v.id(), when, v.why()));
        }
    }

    /** Why {@code id} is no longer live, or null if it is live or was never declared. */
    public Dropped dropped(long id) {
        lock.lock();
        try {
            return dropped.get(id);
        } finally {
            lock.unlock();
        }
    }

    /** The declaration of live snapshot {@code id}, or null (never declared, or dropped by the policy). */
    public SnapshotRecord find(long id) {
        lock.lock();
        try {
            return snapshots.get(id);
        } finally {
            lock.unlock();
        }
    }

    /** Every live snapshot, oldest first. */
    public List<SnapshotRecord> snapshots() {
        lock.lock();
        try {
            return new ArrayList<>(snapshots.values());
        } finally {
            lock.unlock();
        }
    }

    /** Archive bytes held for snapshot {@code id}: its captured pre-states and their mappings. */
    public long archiveBytes(long id) {
        lock.lock();
        try {
            long[] c = capturesPerSnapshot.get(id);
            return c == null ? 0 : c[0] * (pageSize + Pagelog.RECORD_HEADER + MaplogFile.ENTRY);
        } finally {
            lock.unlock();
        }
    }

    /** Time writers waited for room in the capture buffer (the archiver's back-pressure), since open. */
    public long captureWaitNanos() {
        return captureWaitNanos.sum();
    }

    /** Bytes the archive holds on disk. */
    public long bytes() {
        return pagelog.bytes() + skippy.bytes();
    }

    // ---------------------------------------------------------------- capture and archiving

    /** Copies the pre-state of {@code page} for {@code snapshot}; waits while the capture buffer is full. */
    void capture(Frame page, long snapshot) {
        long start = 0;
        int slot;
        while ((slot = slots.copyOf(page)) < 0) {
            checkUsable();
            archiver.wake();
            if (start == 0) start = System.nanoTime();
            if (System.nanoTime() - start > WAIT_LIMIT_NANOS) throw new StorageException("capture buffer full for "
                    + TimeUnit.NANOSECONDS.toSeconds(WAIT_LIMIT_NANOS) + " s: the archiver is not keeping up", null);
            LockSupport.parkNanos(20_000);
        }
        if (start != 0) captureWaitNanos.add(System.nanoTime() - start);
        long pageId = page.heldPageId();
        lock.lock();
        try {
            Pending p = new Pending(nextCapture++, pageId, snapshot, slot);
            pending.addLast(p);
            for (SnapshotPageTable v : views) v.onCapture(pageId, snapshot, SnapshotPageTable.pendingLocation(slot));
        } finally {
            lock.unlock();
        }
        archiver.wake();
    }

    /**
     * Archives the oldest pending captures, up to a batch: their pages go to the Pagelog in one write, then their
     * mappings to the Maplog, in capture order. False when none was pending. Archiver thread only.
     */
    boolean archiveNext() {
        List<Pending> batch = new ArrayList<>(ARCHIVE_BATCH);
        lock.lock();
        try {
            for (Pending p : pending) {
                if (batch.size() == ARCHIVE_BATCH) break;
                batch.add(p);
            }
        } finally {
            lock.unlock();
        }
        if (batch.isEmpty()) return false;
        for (Pending p : batch) {
            long address = pagelog.append(p.pageId(), p.snapshot(), slots.memory(), slots.offsetOf(p.slot()));
            if (address != p.number()) throw new IllegalStateException("Pagelog address " + address + " differs from capture number " + p.number());
        }
        pagelog.writeStaged();
        lock.lock();
        try {
            for (Pending p : batch) {
                skippy.append(p.pageId(), p.snapshot(), p.number());
                for (SnapshotPageTable v : views) v.onArchived(p.pageId(), SnapshotPageTable.pendingLocation(p.slot()), p.number());
                pending.removeFirst();
                slots.free(p.slot());
                capturesPerSnapshot.computeIfAbsent(p.snapshot(), x -> new long[1])[0]++;
                archived = p.number() + 1;
            }
        } finally {
            lock.unlock();
        }
        return true;
    }

    void failed(Throwable t) {
        failure = t;
    }

    private void checkUsable() {
        Throwable f = failure;
        if (f != null) throw new StorageException("the snapshot archiver failed earlier (" + f + ")", null, f);
    }

    // ---------------------------------------------------------------- checkpoint protocol

    @Override
    public void onMark(long checkpointId, long markLsn) {
        lock.lock();
        try {
            markCapture = nextCapture;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void beforeStartMarker(long checkpointId, long markLsn) {
        flush(markLsn);
    }

    /**
     * After a checkpoint: reclaims the Pagelog segments no live snapshot and no open view can reach — wholly below
     * Start of the oldest of them — and no recovery can need — below this checkpoint's mark. Whole files go;
     * nothing is copied. Drop decisions are made durable first, so a crash cannot bring back a snapshot whose data
     * is gone.
     */
    @Override
    public void afterEndMarker(long checkpointId, long markLsn) {
        long limit;
        lock.lock();
        try {
            drops.force();
            limit = Math.min(markCapture, snapshots.isEmpty() ? nextCapture : snapshots.firstEntry().getValue().start());
            for (SnapshotPageTable v : views) limit = Math.min(limit, v.start());
        } finally {
            lock.unlock();
        }
        pagelog.reclaimBelow(limit);
    }

    /** Archive bytes given back by reclamation since open. */
    public long reclaimedBytes() {
        return pagelog.reclaimedBytes();
    }

    /**
     * Makes every capture up to the mark durable — Pagelog, then Maplog and Skippy, then Start records — and
     * records the mark's capture number (I4, I5).
     */
    void flush(long markLsn) {
        long target;
        lock.lock();
        try {
            target = markCapture;
        } finally {
            lock.unlock();
        }
        long start = System.nanoTime();
        while (archived < target) {
            checkUsable();
            archiver.wake();
            if (System.nanoTime() - start > WAIT_LIMIT_NANOS) throw new StorageException("the archiver did not catch up with the checkpoint mark", null);
            LockSupport.parkNanos(20_000);
        }
        lock.lock();
        try {
            pagelog.force();
            skippy.force();
            snapshotLog.force();
            drops.force();
            marks.append(markLsn, target, 0);
            marks.force();
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- views

    /** Builds SPT(v) for snapshot {@code id} and keeps it current until {@link #closeView}. */
    SnapshotPageTable openView(SnapshotRecord r) {
        SnapshotPageTable spt = new SnapshotPageTable(r.id(), r.start());
        long built = skippy.size();
        skippy.buildSpt(r.start(), spt.map(), built);
        lock.lock();
        try {
            skippy.catchUp(built, spt.map());
            for (Pending p : pending) if (p.snapshot() >= r.id()) spt.map().putIfAbsent(p.pageId(), SnapshotPageTable.pendingLocation(p.slot()));
            views.add(spt);
        } finally {
            lock.unlock();
        }
        return spt;
    }

    void closeView(SnapshotPageTable spt) {
        lock.lock();
        try {
            views.remove(spt);
        } finally {
            lock.unlock();
        }
    }

    /** Copies the archived image of {@code pageId} as of the view's snapshot into {@code dst}; false when SPT lacks it. */
    boolean readArchived(SnapshotPageTable spt, long pageId, ByteBuffer dst, int offset) {
        long location;
        lock.lock();
        try {
            location = spt.map().get(pageId, SnapshotPageTable.MISSING);
            if (location == SnapshotPageTable.MISSING) return false;
            if (SnapshotPageTable.isPending(location)) {
                slots.copyOut(SnapshotPageTable.slotOf(location), dst, offset);
                return true;
            }
        } finally {
            lock.unlock();
        }
        pagelog.read(location, pageId, dst, offset);
        return true;
    }

    /** The Skippy index (benchmarks and tests). */
    Skippy skippy() {
        return skippy;
    }

    @Override
    public void close() {
        archiver.stop();
        pagelog.close();
        skippy.close();
        snapshotLog.close();
        marks.close();
        drops.close();
    }
}
