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
                level = registry.readLevel(r.id());
                start = registry.readStart(r);
                extent = registry.movedTo(r.id()) == 0 ? null : extents.of(r.id());
            } finally {
                lock.unlock();
            }
            LongLongMap spt = new LongLongMap(1024);
            Skippy maplog = levels[level - 1].maplog;
            if (extent != null && !io.exists(extent.path())) {
                out.add("snapshot " + r.id() + " reads ranked extent " + extent.path() + ", which is gone");
            } else if (extent != null) {
                try (RankedExtent.Reader reader = extent.reader(io)) {
                    reader.forEachRecord((pageId, offset, base) -> checkHeld(r.id(), pageId, base, out));
                    reader.index(spt);
                }
            }
            maplog.buildSpt(start, spt, maplog.size());
            spt.forEach((pageId, location) -> checkHeld(r.id(), pageId, location, out));
        }
        return out;
    }

    private void checkHeld(long snapshot, long pageId, long location, List<String> out) {
        if (location < 0 || ArchiveEncoding.isExtent(location)) return;
        if (!ArchiveLevel.holds(levels, location))
            out.add("snapshot " + snapshot + " maps page " + pageId + " to reclaimed level-" + ArchiveEncoding.levelOf(location)
                    + " address " + ArchiveEncoding.addressOf(location));
    }
}
