package dev.varve.snapshot;

import dev.varve.core.memory.Frame;
import dev.varve.core.memory.PageSlots;
import dev.varve.core.page.Page;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * The writer's side of the archive: a page's pre-state, copied into the capture buffer before its first change after
 * the latest snapshot ({@link Capture} decides when), is numbered, and the levels that record it, its Maplog positions
 * and the volume that stores it are decided (highest recorder captures) — so a checkpoint mark knows them before the
 * archiver writes anything — and whether it is stored as a diff against the page's previous capture. It takes the
 * archive's state lock for the numbering only: the copy, and any wait for room in the buffer, happen outside it, and
 * it never waits for an fsync.
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
    private final LongAdder captureWaitNanos = new LongAdder();
    /** The longest diff chain: 0 stores every pre-state whole. */
    private final int diffChain;
    // guarded by lock
    private long nextCapture;

    CapturePath(ArchiveLock lock, ArchiveLevel[] levels, SnapshotRegistry registry, PageSlots slots, PendingCaptures pending, OpenViews views,
                int diffChain) {
        this.lock = lock;
        this.levels = levels;
        this.registry = registry;
        this.slots = slots;
        this.pending = pending;
        this.views = views;
        this.diffChain = diffChain;
    }

    /** Latest snapshot declared (replayed, or since recovery): the one a page's pre-state is captured for. */
    long latestDeclared() {
        return registry.declaredLatest();
    }

    /**
     * Copies the pre-state of {@code page}, whose SavedAfter was {@code savedAfter}, for the latest snapshot
     * {@code snapshot}; decides which levels record it, where it is stored, and whether as a diff against the page's
     * previous capture (diff capture: when that one is in the same volume, the chain behind it is shorter than the
     * bound and few chunks changed since). Waits while the capture buffer is full. Caller holds the page's write latch.
     */
    void capture(Frame page, long snapshot, long savedAfter) {
        long start = 0;
        int slot;
        while ((slot = slots.copyOf(page)) < 0) {
            if (start == 0) start = System.nanoTime(); // before the first wait for the archiver, which is part of it
            pending.awaitProgress();
            PendingCaptures.pauseUnlessOverdue(start, BUFFER_FULL);
        }
        if (start != 0) captureWaitNanos.add(System.nanoTime() - start);
        long pageId = page.heldPageId();
        long[] changed = page.takeChanged(); // since the previous capture: from here on, changes count towards the next
        PendingCaptures.Pending previous = page.captureNote() instanceof PendingCaptures.Pending p && p.pageId() == pageId ? p : null;
        PendingCaptures.Pending p;
        page.captureNote(null); // until this capture is queued: if it fails, the next one must be whole
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
            PendingCaptures.Pending base = diffBase(previous, top, changed, page.chunkBytes());
            p = new PendingCaptures.Pending(nextCapture++, pageId, slot, mask, stamps, positions, top, lo, snapshot, base, changed); // highest recorder stores
            pending.add(p); // the archiver looks every millisecond: waking it per capture costs the writer a system call
            views.onCapture(p, SnapshotPageTable.pendingLocation(slot));
        } finally {
            lock.unlock();
        }
        page.captureNote(p);
    }

    /**
     * The capture a new pre-state of the page may be a diff against: its {@code previous} capture, when that is
     * stored in volume {@code top} too (chains never cross volumes, which are reclaimed apart), its chain is shorter
     * than the bound, and the chunks {@code changed} since make an entry of at most half a page; else null (whole).
     */
    private PendingCaptures.Pending diffBase(PendingCaptures.Pending previous, int top, long[] changed, int chunkBytes) {
        if (previous == null || previous.volume() != top || previous.chain() >= diffChain || Page.isAllChanged(changed)) return null;
        if (PagelogDescriptor.entryBytesAtMost(changed, chunkBytes) > chunkBytes * Page.CHUNKS / 2) return null;
        return levels[top - 1].volume.packsAllowed() ? previous : null;
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
