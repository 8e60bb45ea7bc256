package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;

import java.util.TreeMap;
import java.util.function.LongSupplier;

/**
 * Retention: applies the rank-tree policy's rules as snapshots age, and its byte budget — over it, drops snapshots
 * lowest rank first, oldest first within a rank ({@link SnapshotRegistry#dropForBudget}), until the bytes
 * attributed to them cover the excess. A snapshot's bytes are the pre-states first captured for it as they are
 * stored, with their level-1 mappings, and its ranked extent; they are known exactly because each capture is counted
 * as it is archived (and recounted from the level-1 Maplog by recovery) by the bytes it takes: a whole page, or a
 * diff's share of its pack (see {@link #captured}). Counting every pre-state as a whole page made the figures add up to
 * several times the archive under diff capture, so the budget dropped a fraction of what it meant to. A drop from an
 * open view's snapshot on gives nothing back until the view closes (it pins everything archived after its snapshot), so
 * its bytes stay counted as pending until a reclamation finds it below every open view's snapshot: given back at every
 * reclamation instead, they let each declaration find the archive over the budget again and drop the next snapshots
 * in line, and a view left open drained the history down to the latest snapshot. Dropped bytes come back only when reclamation deletes whole segments, so what earlier budget
 * drops will give back is counted until then ({@link #givenBack}). Guarded by the archive's state lock.
 */
final class RetentionEnforcer {
    private final ArchiveLock lock;
    private final SnapshotRegistry registry;
    private final RankedExtents extents;
    /** The policy's archive budget in bytes, -1 when none. */
    private final long budget;
    /** Bytes the archive holds on disk. */
    private final LongSupplier archiveBytes;

    // guarded by lock
    /** Bytes of the pre-states first captured for each snapshot from the oldest live one on, mappings included. */
    private final CaptureCounts capturesPerSnapshot = new CaptureCounts();
    /** The packs met last, per level, which the next diffs give back to. */
    private final CaptureTally tally;
    private final int pageSize;
    /** Bytes attributed to snapshots the budget dropped that no reclamation has given back yet; by id in {@link #pendingDrops}. */
    private long budgetPending;
    private final TreeMap<Long, Long> pendingDrops = new TreeMap<>();
    /** Snapshots the capture counts span beyond the live ones after a trim ({@link #trimCounts}). */
    private static final int COUNTS_SLACK = 1024;

    RetentionEnforcer(ArchiveLock lock, SnapshotRegistry registry, RankedExtents extents, int pageSize, long budget, LongSupplier archiveBytes) {
        this.lock = lock;
        this.registry = registry;
        this.extents = extents;
        this.budget = budget;
        this.archiveBytes = archiveBytes;
        this.tally = newTally(pageSize);
        this.pageSize = pageSize;
    }

    /** Applies the retention policy now (keepFor rules age); the archiver calls it periodically. */
    void enforce() {
        lock.lockWithAppends(); // drops are appended to the drop log
        try {
            // the clock's drops, of snapshots the declarations and raises so far left to a keepFor age alone: lost in a
            // crash, the latest of them may be what pushed one out of a keepLast window that keeps it again after recovery
            registry.enforce(registry.wallNow(), true, registry.lastWindowChange());
            enforceBudget(Long.MAX_VALUE); // the writes appended so far, whose pre-states the archive holds, passed it
        } finally {
            lock.unlockWithAppends();
        }
    }

    /** Open: the snapshots of the raises replay will apply, which it keeps until then ({@link RaisesAhead}). */
    void raisesAhead(long[] raised) {
        lock.lock();
        try {
            registry.raisesAhead(raised);
        } finally {
            lock.unlock();
        }
    }

    /**
     * After the declaration logged at {@code walLsn}: the budget, and the capture counts of snapshots no longer live
     * forgotten. Caller holds the lock.
     */
    void declared(long walLsn) {
        enforceBudget(walLsn);
        capturesPerSnapshot.forgetBelow(registry.oldestLive());
        trimCounts();
    }

    /**
     * Keeps the capture counts to about twice the live snapshots (and some slack): when their run spans more — a
     * snapshot kept for good holds its front — it is trimmed to the latest ones, the live snapshots below set aside.
     * A trim costs the run's length and comes after as many declarations again, so it adds a constant per
     * declaration. Caller holds the lock.
     */
    private void trimCounts() {
        int live = registry.liveCount();
        if (capturesPerSnapshot.span() > 2L * live + 2 * COUNTS_SLACK)
            capturesPerSnapshot.trim(registry.latest() + 1 - live - COUNTS_SLACK, registry.live().stream().mapToLong(SnapshotRecord::id).toArray());
    }

    /**
     * Over the budget, drops snapshots (lowest rank, oldest first) until the bytes attributed to them cover the
     * excess, counting what earlier budget drops will give back at the next reclamation; the drops wait for the WAL
     * record at {@code causeLsn} ({@link SnapshotRegistry#dropForBudget}). Caller holds the lock.
     */
    private void enforceBudget(long causeLsn) {
        if (budget < 0) return;
        long excess = archiveBytes.getAsLong() - budget - budgetPending;
        if (excess > 0) budgetPending += registry.dropForBudget(excess, budget, id -> {
            long bytes = attributedBytes(id);
            pendingDrops.merge(id, bytes, Long::sum);
            return bytes;
        }, causeLsn);
    }

    /** Archive bytes held for snapshot {@code id}: its captured pre-states as stored, their mappings and its ranked extent. */
    long archiveBytes(long id) {
        lock.lock();
        try {
            return attributedBytes(id);
        } finally {
            lock.unlock();
        }
    }

    /** The pre-states first captured for snapshot {@code id} as stored, with their level-1 mappings, and its ranked extent. Caller holds the lock. */
    private long attributedBytes(long id) {
        RankedExtent e = extents.of(id);
        return capturesPerSnapshot.get(id) + (e == null ? 0 : e.bytes());
    }

    /**
     * A pre-state first captured for {@code snapshot} was archived at {@code location} (or found there by recovery),
     * in archive order: counts the bytes it takes, with its level-1 mapping. A whole page takes its record. The diffs
     * of a pack lie one after another in it, in archive order among their volume's diffs, so a diff takes its pack's
     * body from its offset to the end, and gives the previous diff of the same pack back what lies past its own start:
     * once the pack is full each diff owns its bytes, the first one the record and pack headers too, and the pack's
     * unused tail goes with its last — what the live snapshots' figures add up to is what their records take on disk.
     * Only the location is needed, so recovery recounts from the level-1 Maplog alone, to the same figures: what of it
     * was reclaimed (an upper-rank snapshot's captures, once the rank-1 snapshots after it moved on) reclamation counted
     * first, into {@link CaptureCountsFile}. Caller holds the lock.
     */
    void captured(long snapshot, long location) {
        tally.captured(snapshot, location, capturesPerSnapshot::add);
        trimCounts(); // recovery recounts every capture the Maplog holds, back to a snapshot kept for good, in one go
    }

    /**
     * Recovery, once the registry knows the live snapshots and before it counts the captures the archive holds: none
     * counted, and those of snapshots older than the oldest live one (an unreclaimed part of the Maplog) not counted
     * at all, so the counts span the live snapshots only. Caller holds the lock.
     */
    void forgetCaptures() {
        capturesPerSnapshot.clear();
        tally.reset();
        capturesPerSnapshot.forgetBelow(registry.oldestLive());
    }

    /**
     * Recovery, after {@link #forgetCaptures} and before it counts the captures the level-1 Maplog still holds: the
     * counts of its reclaimed part, as reclamation kept them, for the snapshots still live. Caller holds the lock.
     */
    void reclaimedCounted(CaptureCountsFile.Saved saved) {
        for (var e : saved.counts().entrySet())
            if (registry.find(e.getKey()) != null) capturesPerSnapshot.add(e.getKey(), e.getValue());
        tally.resumeFrom(saved.lastPack(), saved.lastInPack());
    }

    /** A tally of captures that counts as this one does, from no pack met: reclamation's, of what it deletes. */
    CaptureTally newTally() {
        return newTally(pageSize);
    }

    private static CaptureTally newTally(int pageSize) {
        return new CaptureTally(pageSize, RankTreePolicy.MAX_LEVELS);
    }

    /** Snapshots the capture counts span (tests: it follows the live snapshots, not the span they cover). Caller holds the lock. */
    int countedSpan() {
        return capturesPerSnapshot.span();
    }

    /** What budget drops not given back yet will give back. Caller holds the lock. */
    long budgetPending() {
        return budgetPending;
    }

    /**
     * A reclamation decides what may go: the budget drops it can give back are those below every open view's snapshot
     * (a view pins what was archived from its snapshot on). Returns their ids for {@link #givenBack}. Caller holds the lock.
     */
    long[] reclaimable() {
        return pendingDrops.headMap(registry.oldestViewed()).keySet().stream().mapToLong(Long::longValue).toArray();
    }

    /** Reclamation gave back, as far as whole segments allow, what the budget drops {@code ids} had pending. Caller holds the lock. */
    void givenBack(long[] ids) {
        for (long id : ids) {
            Long bytes = pendingDrops.remove(id);
            if (bytes != null) budgetPending -= bytes;
        }
    }
}
