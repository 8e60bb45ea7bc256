package dev.varve.snapshot;

import dev.varve.core.io.FileIOFactory;
import dev.varve.core.util.LongLongMap;

import java.util.ArrayList;
import java.util.List;

/**
 * The I8 check, Thresher's reclamation order I(1), I(2): no live mapping points at reclaimed data. Builds SPT(v) of
 * every live snapshot — its ranked extent first, then its level's Maplog from Start — and lists every mapping, and
 * every extent's diff base, that points at a reclaimed volume address or a missing extent. For tests and tools; it
 * reads every Maplog from each Start, outside the archive's state lock.
 */
final class ReclamationCheck {
    private final ArchiveLock lock;
    private final FileIOFactory io;
    private final ArchiveLevel[] levels;
    private final SnapshotRegistry registry;
    private final RankedExtents extents;

    ReclamationCheck(ArchiveLock lock, FileIOFactory io, ArchiveLevel[] levels, SnapshotRegistry registry, RankedExtents extents) {
        this.lock = lock;
        this.io = io;
        this.levels = levels;
        this.registry = registry;
        this.extents = extents;
    }

    /** The mappings of live snapshots that point at reclaimed data; empty when the invariant holds. */
    List<String> reachableButReclaimed() {
        List<SnapshotRecord> live;
        lock.lock();
        try {
            live = registry.live();
        } finally {
            lock.unlock();
        }
        List<String> out = new ArrayList<>();
        for (SnapshotRecord r : live) {
            int level;
            long start;
            RankedExtent extent;
            lock.lock();
            try {
                // dropped since the list was taken: its declared rank is forgotten (its read level would be wrong) and
                // reclamation may take what only it reached, rightly — not damage
                if (registry.find(r.id()) == null) continue;
                level = registry.readLevel(r.id());
                start = registry.readStart(r);
                extent = registry.movedTo(r.id()) == 0 ? null : extents.of(r.id());
            } finally {
                lock.unlock();
            }
            List<String> found = new ArrayList<>();
            try {
                check(r.id(), level, start, extent, found);
            } catch (RuntimeException e) {
                if (live(r.id())) throw e;
                continue; // dropped while it was read: a part reclaimed under the scan is no damage either
            }
            if (live(r.id())) out.addAll(found);
        }
        return out;
    }

    private boolean live(long id) {
        lock.lock();
        try {
            return registry.find(id) != null;
        } finally {
            lock.unlock();
        }
    }

    /** Lists in {@code out} the mappings of snapshot {@code id}, read through {@code level} from {@code start}, that point at reclaimed data. */
    private void check(long id, int level, long start, RankedExtent extent, List<String> out) {
        LongLongMap spt = new LongLongMap(1024);
        Skippy maplog = levels[level - 1].maplog;
        if (extent != null && !io.exists(extent.path())) {
            out.add("snapshot " + id + " reads ranked extent " + extent.path() + ", which is gone");
        } else if (extent != null) {
            try (RankedExtent.Reader reader = extent.reader(io)) {
                reader.forEachRecord((pageId, offset, base) -> checkHeld(id, pageId, base, out));
                reader.index(spt);
            }
        }
        maplog.buildSpt(start, spt, maplog.size());
        spt.forEach((pageId, location) -> checkHeld(id, pageId, location, out));
    }

    private void checkHeld(long snapshot, long pageId, long location, List<String> out) {
        if (location < 0 || ArchiveEncoding.isExtent(location)) return;
        if (!ArchiveLevel.holds(levels, location))
            out.add("snapshot " + snapshot + " maps page " + pageId + " to reclaimed level-" + ArchiveEncoding.levelOf(location)
                    + " address " + ArchiveEncoding.addressOf(location));
    }
}
