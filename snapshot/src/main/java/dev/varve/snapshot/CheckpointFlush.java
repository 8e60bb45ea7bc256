package dev.varve.snapshot;

import java.util.List;

/**
 * The archive's part of a checkpoint (write-ahead snapshot, I4; archive data before archive metadata, I5). At the
 * mark ({@link #onMark}, under the checkpoint write lock) it notes the capture number, every level's Maplog position,
 * the logs' record counts and the lazy-ranking copies due; the volumes' ends at the mark are known once the archiver
 * has archived every capture before it (diffs are packed as they are archived). Before the start marker
 * ({@link #flush}) it waits for the archiver to reach the mark, makes the copies, and makes everything up to the
 * mark durable — volumes, then Maplogs with their Skippy levels, then the snapshot, drop, join and move logs — and
 * last records the mark ({@link ArchiveMarks}), with the retention policy's clock at the mark.
 *
 * <p>The fsyncs run under the archive's append gate only, never under the state lock the writer's path takes: the
 * positions are taken under the state lock first, and the gate keeps the logs still while they are forced, so a
 * capture goes on while the disk syncs ({@link ArchiveLock}). A declaration waits for the gate holding the checkpoint
 * write lock, and so every writer with it: the volumes and the Maplog parts written so far are forced before the gate
 * is taken, with the archiver still appending, which leaves the forces under it what was written in between.
 */
final class CheckpointFlush {
    private final ArchiveLock lock;
    private final ArchiveLevel[] levels;
    private final SnapshotRegistry registry;
    private final MoveLog moves;
    private final ArchiveMarks marks;
    private final CapturePath captures;
    private final PendingCaptures pending;
    private final LazyRanker ranker;
    private final int pageWindow;

    // guarded by lock
    /** The lazy-ranking copies decided at the latest checkpoint mark: {snapshot, target level}. */
    private List<SnapshotRegistry.Move> dueAtMark = List.of();
    private long markCapture;
    /** At the latest checkpoint mark: the snapshot, drop and join logs' record counts, and the latest declared id. */
    private long[] logsAtMark = new long[3];
    private long latestAtMark;
    /** The retention policy's clock at the latest checkpoint mark. */
    private PolicyClock clockAtMark = PolicyClock.NONE;

    CheckpointFlush(ArchiveLock lock, ArchiveLevel[] levels, SnapshotRegistry registry, MoveLog moves, ArchiveMarks marks, CapturePath captures,
                    PendingCaptures pending, LazyRanker ranker, int pageWindow) {
        this.lock = lock;
        this.levels = levels;
        this.registry = registry;
        this.moves = moves;
        this.marks = marks;
        this.captures = captures;
        this.pending = pending;
        this.ranker = ranker;
        this.pageWindow = pageWindow;
    }

    /**
     * Notes what the mark covers; no write is in flight (the checkpoint write lock is held). The policy's clock is
     * taken at the wall clock's time when {@code clockRead}, else as it stands (a checkpoint replay takes when the data
     * region runs short): {@link SnapshotRegistry#policyClock}.
     */
    void onMark(boolean clockRead) {
        lock.lock();
        try {
            dueAtMark = registry.dueForMove(pageWindow); // taken now: a raise between the mark and the copy waits for the next
            markCapture = captures.nextNumber();
            logsAtMark = registry.counts();
            latestAtMark = registry.declaredLatest();
            clockAtMark = registry.policyClock(clockRead); // with the declarations it counts: recovery counts those before the mark
            pending.markAt(markCapture); // the volumes' ends at the mark are known once the archiver gets there
            for (ArchiveLevel l : levels) l.mappingsAtMark = l.nextMapping;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Makes every capture up to the mark durable — Pagelog, then Maplog and Skippy, then Start records — and
     * records the mark's capture number (I4, I5).
     */
    void flush(long markLsn) {
        long target;
        long[][] atMark = new long[2][levels.length];
        long[] logs;
        long latestDeclared;
        PolicyClock clock;
        lock.lock();
        try {
            target = markCapture;
            logs = logsAtMark;
            latestDeclared = latestAtMark;
            clock = clockAtMark;
            for (ArchiveLevel l : levels) atMark[0][l.level - 1] = l.mappingsAtMark;
        } finally {
            lock.unlock();
        }
        pending.awaitArchived(target);
        List<SnapshotRegistry.Move> due;
        lock.lock();
        try {
            atMark[1] = pending.endsAtMark();
            for (ArchiveLevel l : levels) l.addressesAtMark = atMark[1][l.level - 1];
            due = dueAtMark;
            dueAtMark = List.of();
        } finally {
            lock.unlock();
        }
        for (SnapshotRegistry.Move m : due) ranker.copyToLevel(m, markLsn);
        for (ArchiveLevel l : levels) l.volume.forceFilled(); // the bulk of the write-back, while the archiver still appends
        // then the segment it appends to, before the gate: declarations wait for the gate holding the checkpoint write
        // lock, so every writer stalls for what is synced under it; left there is only what the archiver wrote since
        for (ArchiveLevel l : levels) l.volume.force();
        for (ArchiveLevel l : levels) l.maplog.forceWritten(); // likewise the Maplog parts written so far
        registry.forceDropCauses(); // the WAL records behind the drops, while declarations go on
        lock.lockAppends(); // not the state lock: captures go on while the files sync
        try {
            for (ArchiveLevel l : levels) l.volume.force();
            for (ArchiveLevel l : levels) l.maplog.force();
            registry.force();
            moves.force();
            marks.append(new ArchiveMarks.Mark(markLsn, atMark[0], atMark[1], logs[0], logs[1], logs[2], moves.count(), latestDeclared, registry.latest(),
                    clock));
            registry.marked(latestDeclared);
        } finally {
            lock.unlockAppends();
        }
    }
}
