package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;

import dev.varve.core.io.FileIOFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Reclamation after each checkpoint, in whole files, nothing copied: Pagelog segments in temporal order (I8: below
 * the mark, below any ranked extent's bases, and none of whose pre-states a live snapshot or open view can reach),
 * Maplog portions before the first position any live snapshot or view scans from, the ranked extents of dropped
 * or re-copied snapshots no view reads, and the snapshot, drop, join and move logs' records of long-dropped
 * snapshots ({@link SnapshotRegistry#compactLogs}, {@link MoveLog#compact}). Also measures what it cannot give
 * back: fragmentation, the dead pre-states behind live ones ({@link #deadBytesInLiveSegments}).
 *
 * <p>What may go is decided under the archive's state lock; the drop log is forced under the append gate alone, and
 * the files are deleted holding neither.
 */
final class Reclaimer {
    private final ArchiveLock lock;
    private final FileIOFactory io;
    private final ArchiveLevel[] levels;
    private final SnapshotRegistry registry;
    private final RankedExtents extents;
    private final OpenViews views;
    private final RetentionEnforcer retention;
    private final ArchiveMarks marks;
    private final MoveLog moves;
    /** The drop log's count when the last reclamation decided what may go (guarded by the lock); -1 before any. */
    private long dropsDecided = -1;
    /**
     * Bytes of the ranked extents deleted since open: they leave {@link SnapshotArchive#bytesPerLevel} as segments
     * do, so {@link #reclaimedBytes} counts them too. Written by the one thread that reclaims, read by metrics.
     */
    private final AtomicLong extentBytesReclaimed = new AtomicLong();
    /**
     * What {@link CaptureCountsFile} holds, as recovery took it ({@link #resumeCounts}; read at the first reclamation
     * when no recovery ran). Used by the one thread that reclaims.
     */
    private CaptureCountsFile.Saved counted;

    Reclaimer(ArchiveLock lock, FileIOFactory io, ArchiveLevel[] levels, SnapshotRegistry registry, RankedExtents extents, OpenViews views,
              RetentionEnforcer retention, ArchiveMarks marks, MoveLog moves) {
        this.lock = lock;
        this.io = io;
        this.levels = levels;
        this.registry = registry;
        this.extents = extents;
        this.views = views;
        this.retention = retention;
        this.marks = marks;
        this.moves = moves;
    }

    /**
     * After a checkpoint: reclaims the Pagelog segments no live snapshot and no open view can reach — wholly below
     * Start of the oldest of them — and no recovery can need — below this checkpoint's mark. Whole files go;
     * nothing is copied. Drop decisions are made durable first, so a crash cannot bring back a snapshot whose data
     * is gone.
     */
    void afterEndMarker(long markLsn) {
        List<TreeSet<Long>> reachingUpTo = new ArrayList<>();
        long[] limits = new long[levels.length];
        long[] scannedFrom = new long[levels.length];
        List<RankedExtent> unused;
        long[] givenBack;
        CompactionPlan compaction;
        Set<Long> live;
        lock.lock();
        try {
            live = registry.live().stream().map(SnapshotRecord::id).collect(java.util.stream.Collectors.toSet()); // the others' drops are forced below
            dropsDecided = registry.counts()[1];
            givenBack = retention.reclaimable();
            compaction = registry.compactionPlan(moves.due());
            unused = extents.takeUnused(id -> registry.find(id) != null, views::reads);
            for (ArchiveLevel l : levels) {
                limits[l.level - 1] = Math.min(l.addressesAtMark, extents.minPin(l.level)); // a ranked extent's bases stay
                scannedFrom[l.level - 1] = views.scannedFrom(l.level, Math.min(l.mappingsAtMark, registry.firstScanned(l.level)));
                reachingUpTo.add(views.readingUpTo(l.level)); // and the snapshots open views read through level <= l
            }
        } finally {
            lock.unlock();
        }
        registry.forceDropCauses(); // the WAL records that caused them first, while declarations go on
        lock.lockAppends(); // the drops behind these decisions, and any since: durable before a byte goes
        try {
            registry.forceDrops();
            registry.compactLogs(compaction, markLsn); // the records of snapshots dropped by then: their drops were forced just now
            moves.compact(compaction, markLsn); // and the lazy-ranking copies of those dropped, or copied again since
            marks.compactBefore(markLsn); // no recovery uses an older mark now
        } finally {
            lock.unlockAppends();
        }
        for (RankedExtent e : unused) {
            e.delete(io); // whole files, like segments
            extentBytesReclaimed.addAndGet(e.bytes());
        }
        countReclaimed(scannedFrom[0], live); // before the level-1 Maplog portions below it go
        for (ArchiveLevel l : levels) {
            TreeSet<Long> ids = reachingUpTo.get(l.level - 1);
            l.volume.reclaimOldest(limits[l.level - 1], (lo, hi) -> noneIn(ids, lo, hi));
            l.maplog.reclaimBefore(scannedFrom[l.level - 1]); // and the Maplog portions no scan starts in any more
        }
        lock.lock();
        try {
            retention.givenBack(givenBack); // given back now, as far as whole segments allow; later drops, and those views pin, still count
        } finally {
            lock.unlock();
        }
    }

    /** Recovery read {@link CaptureCountsFile} and took {@code saved} of it: reclamation goes on from there, reading it no more. */
    void resumeCounts(CaptureCountsFile.Saved saved) {
        counted = saved;
    }

    /**
     * Counts the captures of the level-1 Maplog below {@code bound}, which reclamation is about to delete, into
     * {@link CaptureCountsFile} with what it counted before, for the {@code live} snapshots: recovery recounts the
     * archive bytes of each from that Maplog, and an upper-rank snapshot's captures lie in the part that goes.
     */
    private void countReclaimed(long bound, Set<Long> live) {
        MaplogFile maplog = levels[0].maplog.maplog();
        if (counted == null) counted = CaptureCountsFile.read(io, levels[0].dir.getParent(), RankTreePolicy.MAX_LEVELS);
        long from = Math.max(counted.position(), maplog.first());
        if (bound <= from) return;
        TreeMap<Long, Long> counts = new TreeMap<>();
        counted.counts().forEach((id, bytes) -> {
            if (live.contains(id)) counts.put(id, bytes);
        });
        CaptureTally tally = retention.newTally();
        tally.resumeFrom(counted.lastPack(), counted.lastInPack());
        CaptureTally.Sink sink = (id, bytes) -> {
            if (live.contains(id)) counts.merge(id, bytes, Long::sum);
        };
        int chunk = 4096;
        long[] snaps = new long[chunk];
        long[] locations = new long[chunk];
        for (long at = from; at < bound; at += chunk) {
            int k = (int) Math.min(chunk, bound - at);
            maplog.read(at, k, null, snaps, locations);
            for (int i = 0; i < k; i++) tally.captured(snaps[i], locations[i], sink);
        }
        CaptureCountsFile.Saved next = new CaptureCountsFile.Saved(bound, counts, tally.lastPack, tally.lastInPack);
        CaptureCountsFile.write(io, levels[0].dir.getParent(), next);
        counted = next;
    }

    /** Whether snapshots were dropped since the last reclamation decided what may go (or none ran since open). */
    boolean dropsSinceReclaimed() {
        lock.lock();
        try {
            return registry.counts()[1] != dropsDecided;
        } finally {
            lock.unlock();
        }
    }

    /** True when no id of {@code ids} lies in (lo, hi]. */
    private static boolean noneIn(TreeSet<Long> ids, long lo, long hi) {
        Long first = ids.higher(lo);
        return first == null || first > hi;
    }

    /**
     * Fragmentation: bytes of pre-states no live snapshot, open view or ranked extent needs that lie behind one still
     * needed, in any level's volume — what reclamation by whole segments in temporal order cannot give back (reads
     * every record header; for metrics and tests). Eager ranking keeps it at 0: within a level pre-states expire in
     * the order they were archived.
     */
    long deadBytesInLiveSegments() {
        long dead = 0;
        List<TreeSet<Long>> bases = new ArrayList<>();
        for (int j = 0; j < levels.length; j++) bases.add(new TreeSet<>());
        lock.lock(); // so that no extent is deleted under the scan
        try {
            for (RankedExtent e : extents.onDisk()) {
                try (RankedExtent.Reader r = e.reader(io)) {
                    r.forEachRecord((pageId, offset, base) -> {
                        if (base >= 0) bases.get(ArchiveEncoding.levelOf(base) - 1).add(PagelogDescriptor.recordOf(ArchiveEncoding.addressOf(base)));
                    });
                }
            }
        } finally {
            lock.unlock();
        }
        for (ArchiveLevel l : levels) {
            TreeSet<Long> ids;
            lock.lock();
            try {
                ids = views.readingUpTo(l.level);
            } finally {
                lock.unlock();
            }
            TreeSet<Long> based = bases.get(l.level - 1);
            dead += l.volume.deadBytes((lo, hi) -> noneIn(ids, lo, hi), based::contains);
        }
        return dead;
    }

    /** Archive bytes given back by reclamation since open: Pagelog segments, Maplog portions and ranked extents. */
    long reclaimedBytes() {
        long b = extentBytesReclaimed.get();
        for (ArchiveLevel l : levels) b += l.volume.reclaimedBytes() + l.maplog.reclaimedBytes();
        return b;
    }
}
