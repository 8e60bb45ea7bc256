package dev.varve.snapshot;

import java.util.function.LongSupplier;

/**
 * Retention: applies the rank-tree policy's rules as snapshots age, and its byte budget — over it, drops snapshots
 * lowest rank first, oldest first within a rank ({@link SnapshotRegistry#dropForBudget}), until the bytes
 * attributed to them cover the excess. A snapshot's bytes are the pre-states first captured for it with their
 * level-1 mappings, and its ranked extent; they are known exactly because each snapshot's captures are counted as
 * they are archived. Dropped bytes come back only when reclamation deletes whole segments, so what earlier budget
 * drops will give back is counted until then ({@link #givenBack}). Guarded by the archive's state lock.
 */
final class RetentionEnforcer {
    private final ArchiveLock lock;
    private final SnapshotRegistry registry;
    private final RankedExtents extents;
    private final int pageSize;
    /** The policy's archive budget in bytes, -1 when none. */
    private final long budget;
    /** Bytes the archive holds on disk. */
    private final LongSupplier archiveBytes;

    // guarded by lock
    /** Pre-states first captured for each snapshot from the oldest live one on. */
    private final CaptureCounts capturesPerSnapshot = new CaptureCounts();
    /** Bytes attributed to snapshots the budget dropped since the last reclamation: not given back yet. */
    private long budgetPending;

    RetentionEnforcer(ArchiveLock lock, SnapshotRegistry registry, RankedExtents extents, int pageSize, long budget, LongSupplier archiveBytes) {
        this.lock = lock;
        this.registry = registry;
        this.extents = extents;
        this.pageSize = pageSize;
        this.budget = budget;
        this.archiveBytes = archiveBytes;
    }

    /** Applies the retention policy now (keepFor rules age); the archiver calls it periodically. */
    void enforce() {
        lock.lockWithAppends(); // drops are appended to the drop log
        try {
            registry.enforce(System.currentTimeMillis());
            enforceBudget();
        } finally {
            lock.unlockWithAppends();
        }
    }

    /** After a declaration: the budget, and the capture counts of snapshots no longer live forgotten. Caller holds the lock. */
    void declared() {
        enforceBudget();
        capturesPerSnapshot.forgetBelow(registry.oldestLive());
    }

    /**
     * Over the budget, drops snapshots (lowest rank, oldest first) until the bytes attributed to them cover the
     * excess, counting what earlier budget drops will give back at the next reclamation. Caller holds the lock.
     */
    private void enforceBudget() {
        if (budget < 0) return;
        long excess = archiveBytes.getAsLong() - budget - budgetPending;
        if (excess > 0) budgetPending += registry.dropForBudget(excess, budget, this::attributedBytes);
    }

    /** Archive bytes held for snapshot {@code id}: its captured pre-states and their mappings. */
    long archiveBytes(long id) {
        lock.lock();
        try {
            return attributedBytes(id);
        } finally {
            lock.unlock();
        }
    }

    /** The pre-states first captured for snapshot {@code id} with their level-1 mappings, and its ranked extent. Caller holds the lock. */
    private long attributedBytes(long id) {
        RankedExtent e = extents.of(id);
        return capturesPerSnapshot.get(id) * (pageSize + PagelogDescriptor.RECORD_HEADER_SIZE + MaplogDescriptor.ENTRY_SIZE) + (e == null ? 0 : e.bytes());
    }

    /** A pre-state first captured for {@code snapshot} was archived (or found by recovery). Caller holds the lock. */
    void captured(long snapshot) {
        capturesPerSnapshot.add(snapshot, 1);
    }

    /**
     * Recovery, once the registry knows the live snapshots and before it counts the captures the archive holds: none
     * counted, and those of snapshots older than the oldest live one (an unreclaimed part of the Maplog) not counted
     * at all, so the counts span the live snapshots only. Caller holds the lock.
     */
    void forgetCaptures() {
        capturesPerSnapshot.clear();
        capturesPerSnapshot.forgetBelow(registry.oldestLive());
    }

    /** What budget drops since the last reclamation will give back. Caller holds the lock. */
    long budgetPending() {
        return budgetPending;
    }

    /** Reclamation gave back, as far as whole segments allow, what budget drops had pending: {@code bytes}. Caller holds the lock. */
    void givenBack(long bytes) {
        budgetPending -= bytes;
    }
}
