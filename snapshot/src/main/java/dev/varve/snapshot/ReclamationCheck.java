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

    /** Where a live snapshot is read: its level, its Start there and its ranked extent (null when none). */
    private record Placement(int level, long start, RankedExtent extent) {
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
            Placement read = placement(r);
            // a snapshot dropped (null) before or while it is read is skipped: its declared rank is forgotten (its read
            // level would be wrong) and reclamation may take what only it reached, rightly — not damage. One moved by
            // lazy ranking while it is read is read again where it is now: the old level's parts and extent it used
            // may be reclaimed once it is copied, rightly too. Moves only go up the levels, so this ends.
            while (read != null) {
                List<String> found = new ArrayList<>();
                RuntimeException failed = null;
                try {
                    check(r.id(), read, found);
                } catch (RuntimeException e) {
                    failed = e;
                }
                Placement now = placement(r);
                if (now != null && now.equals(read)) {
                    if (failed != null) throw failed;
                    out.addAll(found);
                    break;
                }
                read = now;
            }
        }
        return out;
    }

    /** Where live snapshot {@code r} is read now; null when it was dropped. */
    private Placement placement(SnapshotRecord r) {
        lock.lock();
        try {
            if (registry.find(r.id()) == null) return null;
            return new Placement(registry.readLevel(r.id()), registry.readStart(r), registry.movedTo(r.id()) == 0 ? null : extents.of(r.id()));
        } finally {
            lock.unlock();
        }
    }

    /** Lists in {@code out} the mappings of snapshot {@code id}, read where {@code at} places it, that point at reclaimed data. */
    private void check(long id, Placement at, List<String> out) {
        LongLongMap spt = new LongLongMap(1024);
        Skippy maplog = levels[at.level() - 1].maplog;
        RankedExtent extent = at.extent();
        if (extent != null && !io.exists(extent.path())) {
            out.add("snapshot " + id + " reads ranked extent " + extent.path() + ", which is gone");
        } else if (extent != null) {
            try (RankedExtent.Reader reader = extent.reader(io)) {
                reader.forEachRecord((pageId, offset, base) -> checkHeld(id, pageId, base, out));
                reader.index(spt);
            }
        }
        maplog.buildSpt(at.start(), spt, maplog.size());
        spt.forEach((pageId, location) -> checkHeld(id, pageId, location, out));
    }

    private void checkHeld(long snapshot, long pageId, long location, List<String> out) {
        if (location < 0 || ArchiveEncoding.isExtent(location)) return;
        if (!ArchiveLevel.holds(levels, location))
            out.add("snapshot " + snapshot + " maps page " + pageId + " to reclaimed level-" + ArchiveEncoding.levelOf(location)
                    + " address " + ArchiveEncoding.addressOf(location));
    }
}
