package dev.varve.snapshot;

import dev.varve.core.memory.Frame;
import dev.varve.core.memory.PageSlots;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * The writer's side of the archive: a page's pre-state, copied into the capture buffer before its first change after
 * the latest snapshot ({@link Capture} decides when), is numbered, and the levels that record it, its Maplog positions
 * and its volume address are handed out (highest recorder captures) — so a checkpoint mark knows them before the
 * archiver writes anything. It takes the archive's state lock for the numbering only: the copy, and any wait for
 * room in the buffer, happen outside it, and it never waits for an fsync.
 */
final class CapturePath {
    private static final String BUFFER_FULL = "capture buffer full for " + TimeUnit.NANOSECONDS.toSeconds(PendingCaptures.WAIT_LIMIT_NANOS)
            + " s: the archiver is not keeping up";

    private final ArchiveLock lock;
    private final ArchiveLevel[] levels;
    private final SnapshotRegistry registry;
    private final PageSlots slots;
    private final PendingCaptures pending;
    private final OpenViews views;
    private final Archiver archiver;
    private final LongAdder captureWaitNanos = new LongAdder();
    // guarded by lock
    private long nextCapture;

    CapturePath(ArchiveLock lock, ArchiveLevel[] levels, SnapshotRegistry registry, PageSlots slots, PendingCaptures pending, OpenViews views,
                Archiver archiver) {
        this.lock = lock;
        this.levels = levels;
        this.registry = registry;
        this.slots = slots;
        this.pending = pending;
        this.views = views;
        this.archiver = archiver;
    }

    /** Latest snapshot declared (replayed, or since recovery): the one a page's pre-state is captured for. */
    long latestDeclared() {
        return registry.declaredLatest();
    }

    /**
     * Copies the pre-state of {@code page}, whose SavedAfter was {@code savedAfter}, for the latest snapshot
     * {@code snapshot}; decides which levels record it and where it is stored. Waits while the capture buffer is full.
     */
    void capture(Frame page, long snapshot, long savedAfter) {
        long start = 0;
        int slot;
        while ((slot = slots.copyOf(page)) < 0) {
            pending.awaitProgress();
            if (start == 0) start = System.nanoTime();
            PendingCaptures.pauseUnlessOverdue(start, BUFFER_FULL);
        }
        if (start != 0) captureWaitNanos.add(System.nanoTime() - start);
        long pageId = page.heldPageId();
        lock.lock();
        try {
            int k = levels.length;
            long[] stamps = new long[k];
            long[] positions = new long[k];
            int mask = 0;
            int top = 1;
            long lo = 0;
            for (int j = 1; j <= k; j++) {
                long latestAtJ = registry.latestAt(j);
                if (latestAtJ == 0) break;
                long savedAfterAtJ = registry.savedAfterAt(j, savedAfter);
                if (latestAtJ <= savedAfterAtJ) continue; // this level has its pre-state already
                mask |= 1 << (j - 1);
                stamps[j - 1] = latestAtJ;
                positions[j - 1] = levels[j - 1].nextMapping++;
                top = j;
                lo = savedAfterAtJ;
            }
            long address = levels[top - 1].nextAddress++; // highest recorder captures
            PendingCaptures.Pending p = new PendingCaptures.Pending(nextCapture++, pageId, slot, mask, stamps, positions, top, address, lo, snapshot);
            pending.add(p);
            views.onCapture(p, SnapshotPageTable.pendingLocation(slot));
        } finally {
            lock.unlock();
        }
        archiver.wake();
    }

    /** The number the next capture gets: at a checkpoint mark, every capture below it is the mark's. Caller holds the lock. */
    long nextNumber() {
        return nextCapture;
    }

    /** Time writers waited for room in the capture buffer (the archiver's back-pressure), since open. */
    long captureWaitNanos() {
        return captureWaitNanos.sum();
    }
}
