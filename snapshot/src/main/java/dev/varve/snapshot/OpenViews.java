package dev.varve.snapshot;

import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.memory.PageSlots;
import dev.varve.core.page.PageId;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * The snapshot page tables of the open as-of views: building SPT(v) when a view opens, keeping it current while
 * pre-states are captured and archived, reading through it, and what the open views pin — reclamation keeps the
 * Maplog from each view's Start and every pre-state its snapshot can reach, and the ranked extent it reads.
 * Guarded by the archive's state lock.
 */
final class OpenViews {
    private final ArchiveLock lock;
    private final FileIOFactory io;
    private final ArchiveLevel[] levels;
    private final SnapshotRegistry registry;
    private final RankedExtents extents;
    private final PageSlots slots;
    // guarded by lock
    private final List<SnapshotPageTable> views = new ArrayList<>();

    OpenViews(ArchiveLock lock, FileIOFactory io, ArchiveLevel[] levels, SnapshotRegistry registry, RankedExtents extents, PageSlots slots) {
        this.lock = lock;
        this.io = io;
        this.levels = levels;
        this.registry = registry;
        this.extents = extents;
        this.slots = slots;
    }

    /**
     * Builds SPT(v) for snapshot {@code r} — from its ranked extent, the Maplog and the captures still
     * {@code pending} — and keeps it current until {@link #close}; null when it was dropped meanwhile.
     */
    SnapshotPageTable open(SnapshotRecord r, PendingCaptures pending) {
        SnapshotPageTable spt;
        lock.lock();
        try {
            if (registry.find(r.id()) == null) return null; // dropped since it was looked up: nothing pins it
            RankedExtent e = registry.movedTo(r.id()) == 0 ? null : extents.of(r.id());
            spt = new SnapshotPageTable(r.id(), registry.readLevel(r.id()), registry.readStart(r), e == null ? null : e.reader(io));
            views.add(spt); // pins what it will read from now on; fed captures only once built
            registry.pin(r.id()); // and its declaration, so that captures keep recording at its level after a drop
        } finally {
            lock.unlock();
        }
        try {
            Skippy maplog = levels[spt.level() - 1].maplog;
            if (spt.extent() != null) spt.extent().index(spt.map()); // its pre-states up to the copy come first
            long built = maplog.size();
            maplog.buildSpt(spt.start(), spt.map(), built);
            lock.lockWithAppends(); // it reads the Maplog under the state lock: never while a flush forces it
            try {
                // from Start(v) when the archiver had not reached it yet: mappings before it are of captures made
                // before the snapshot was declared, which it must never read
                maplog.catchUp(Math.max(built, spt.start()), spt.map());
                pending.feed(spt);
                spt.built();
            } finally {
                lock.unlockWithAppends();
            }
            return spt;
        } catch (RuntimeException e) {
            close(spt);
            throw e;
        }
    }

    void close(SnapshotPageTable spt) {
        lock.lock();
        try {
            if (views.remove(spt)) registry.unpin(spt.snapshot());
        } finally {
            lock.unlock();
        }
        if (spt.extent() != null) spt.extent().close();
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
        ArchiveLevel.read(levels, location, pageId, dst, offset, spt.extent());
        return true;
    }

    /**
     * The error for a page a view needs that changed after its snapshot but has no archived pre-state: the files it
     * was looked for in lost it (or are not the ones written).
     */
    StorageException noPreState(SnapshotPageTable spt, long pageId) {
        Path maplog = levels[spt.level() - 1].maplog.maplog().path();
        String extent = spt.extent() == null ? "" : " and ranked extent " + spt.extent().extent().path();
        return new StorageException("page " + PageId.toString(pageId) + " changed after snapshot " + spt.snapshot() + " but the archive holds no pre-state for it: "
                + "the level-" + spt.level() + " Maplog from position " + spt.start() + extent + " maps none", maplog);
    }

    /** A pre-state was captured into the buffer at {@code location}: each built view whose level records it may map it. Caller holds the lock. */
    void onCapture(PendingCaptures.Pending p, long location) {
        for (SnapshotPageTable v : views) if (!v.building() && p.recordedAt(v.level())) v.onCapture(p.pageId(), p.stamps()[v.level() - 1], location);
    }

    /** A pending capture reached the volume at {@code location}. Caller holds the lock. */
    void onArchived(long pageId, long pendingLocation, long location) {
        for (SnapshotPageTable v : views) if (!v.building()) v.onArchived(pageId, pendingLocation, location);
    }

    /** The lowest Maplog position of {@code level} before {@code from} an open view's scan starts at. Caller holds the lock. */
    long scannedFrom(int level, long from) {
        long min = from;
        for (SnapshotPageTable v : views) if (v.level() == level) min = Math.min(min, v.start());
        return min;
    }

    /**
     * The snapshots whose pre-states in volume {@code level} must stay: the live ones read through that level or
     * below, and those open views read through it or below. Caller holds the lock.
     */
    TreeSet<Long> readingUpTo(int level) {
        TreeSet<Long> ids = registry.readingUpTo(level);
        for (SnapshotPageTable v : views) if (v.level() <= level) ids.add(v.snapshot());
        return ids;
    }

    /** True while an open view reads ranked extent {@code e}. Caller holds the lock. */
    boolean reads(RankedExtent e) {
        return views.stream().anyMatch(v -> v.extent() != null && v.extent().extent() == e);
    }
}
