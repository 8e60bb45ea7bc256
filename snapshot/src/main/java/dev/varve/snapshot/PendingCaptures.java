package dev.varve.snapshot;

import dev.varve.core.io.StorageException;
import dev.varve.core.memory.PageSlots;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The captured pre-states on their way to the archive, in capture order, and their draining: the archiver writes the
 * oldest ones, a batch at a time, to the volumes and their mappings to the Maplogs. Whoever waits for the archiver —
 * a capture for room in the buffer, a checkpoint for the mark — waits here, with a deadline, and learns of its
 * failure. The queue is guarded by the archive's state lock; the archived count and the failure are read without it.
 */
final class PendingCaptures {
    /**
     * Every this many links of a chain, a skip link: the version at such a position is stored as a diff against the
     * version this many links back (of every chunk changed since), not the one before it. A read then walks at most
     * {@code SKIP - 1} links to the last such version and one link per {@code SKIP} from there to the chain's whole
     * page: at most 14 at the default bound of 63, not 63. A mapped first read costs some 0.4 µs a link (measured
     * 2026-12-07, Java 25). What it costs: a skip link stores again what the links it skips changed; one that does
     * not fit a pack is stored whole, which starts the chain again, so the walk stays bounded however much the page
     * changes between captures (with a snapshot every 10 ms a skip entry of the job's load takes some 2.3 KiB: half a
     * page as a limit for it, measured, left such chains without skip links and their first reads at 63 links).
     * Readers follow any earlier base of the segment, so this is no format change.
     */
    static final int SKIP = 8;
    /** How long a capture or a checkpoint waits for the archiver before it gives up. */
    static final long WAIT_LIMIT_NANOS = TimeUnit.SECONDS.toNanos(120);
    /** Captures the archiver writes with one Pagelog write. */
    private static final int ARCHIVE_BATCH = 256;
    /** Captures the archiver lets gather before it writes, unless someone waits (about ten packs of diffs). */
    static final int GATHER = 128;

    /**
     * One captured pre-state on its way to the archive: recorded by the levels in {@code levelMask}, at Maplog
     * {@code positions[j - 1]} with snapshot {@code stamps[j - 1]}, stored in level {@code volume}'s volume; needed
     * by no snapshot outside ({@code lo}, {@code hi}]. With a {@code base} (an earlier capture of the same page stored
     * in the same volume), stored as the chunks {@code changed} since then, {@code chain} links from a whole page.
     * The archiver sets its address when it writes it.
     */
    static final class Pending {
        private final long number;
        private final long pageId;
        private final int slot;
        private final int levelMask;
        private final long[] stamps;
        private final long[] positions;
        private final int volume;
        private final long lo;
        private final long hi;
        private final long[] changed;
        /**
         * Links back to a whole page. Counted from the base's when captured, where the base may not be archived yet;
         * set again when this one is archived, from the base's as archived: a diff its volume stored whole (its base
         * in an earlier segment) is a head, and the captures after it count from 0, not on from the old segment's
         * chain (which ended each new segment's chains that much short of the bound, a whole page more per page per
         * segment). A count taken before that is never lower than the true one, so the bound holds either way.
         */
        private volatile int chain;
        /** The version this one is a diff against until archived (then only its address matters): null for a whole page. */
        private Pending base;
        /**
         * Once archived at a chain position that is not a multiple of {@link #SKIP}: the version at the last multiple
         * before it, the one the next multiple's skip link will be a diff against, and the chunks changed since then
         * (this version's included). Null otherwise.
         */
        private Pending anchor;
        private long[] sinceAnchor;
        private final boolean diff;
        private volatile long address = -1;
        private volatile long head = -1;

        Pending(long number, long pageId, int slot, int levelMask, long[] stamps, long[] positions, int volume, long lo, long hi, Pending base, long[] changed) {
            this.number = number;
            this.pageId = pageId;
            this.slot = slot;
            this.levelMask = levelMask;
            this.stamps = stamps;
            this.positions = positions;
            this.volume = volume;
            this.lo = lo;
            this.hi = hi;
            this.base = base;
            this.diff = base != null;
            this.changed = changed;
            this.chain = base == null ? 0 : base.chain + 1;
        }

        long number() {
            return number;
        }

        long pageId() {
            return pageId;
        }

        int slot() {
            return slot;
        }

        long[] stamps() {
            return stamps;
        }

        long[] positions() {
            return positions;
        }

        int volume() {
            return volume;
        }

        long lo() {
            return lo;
        }

        long hi() {
            return hi;
        }

        /** Its address in its volume once archived and resolved; -1 before. */
        long address() {
            return address;
        }

        /** Links from this version back to a whole page: 0 for a whole page. */
        int chain() {
            return chain;
        }

        boolean recordedAt(int level) {
            return (levelMask & (1 << (level - 1))) != 0;
        }

        /**
         * Writes this pre-state to its volume: whole, or as a diff against its base (archived before it) unless the
         * volume stores it whole to keep the chain in one segment; a diff's address is provisional until its pack is
         * sealed ({@link #resolve}). Archiver only.
         */
        private void archiveTo(Pagelog v, PageSlots slots) {
            if (!diff) {
                address = v.append(pageId, lo, hi, slots.memoryOf(slot), slots.offsetOf(slot));
                head = address;
            } else {
                Pending b = base;
                if (b.address < 0) throw new IllegalStateException("capture " + number + " archived before its base, capture " + b.number);
                int position = b.chain + 1;
                Pending a = b.chain % SKIP == 0 ? b : b.anchor;
                long[] since = a == b || a == null ? changed : or(b.sinceAnchor, changed);
                boolean skip = position % SKIP == 0 && a != null; // then b sits at SKIP - 1 past a multiple: a is its anchor
                address = skip ? v.appendDiff(pageId, lo, hi, a.address, a.head, since, slots.memoryOf(slot), slots.offsetOf(slot))
                        : v.appendDiff(pageId, lo, hi, b.address, b.head, changed, slots.memoryOf(slot), slots.offsetOf(slot));
                boolean storedAsDiff = Pagelog.isDiff(address); // else whole: its base lies in an earlier segment
                head = storedAsDiff ? b.head : address;
                chain = storedAsDiff ? position : 0;
                if (chain % SKIP != 0) {
                    anchor = a;
                    sinceAnchor = since;
                }
                base = null; // only its address was needed: let older versions go
            }
        }

        private static long[] or(long[] a, long[] b) {
            long[] out = new long[a.length];
            for (int i = 0; i < out.length; i++) out[i] = a[i] | b[i];
            return out;
        }

        /** Its address once its volume sealed the pack it went into (after {@link Pagelog#writeStaged}). Archiver only. */
        private void resolve(Pagelog v) {
            address = v.resolve(address);
        }
    }

    private final ArchiveLock lock;
    private final Archiver archiver;
    private final ArchiveLevel[] levels;
    private final PageSlots slots;
    private final OpenViews views;
    private final RetentionEnforcer retention;
    // guarded by lock
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    /** Captures numbered below this one are archived. */
    private volatile long archived;
    /** The latest checkpoint mark's capture number, and every volume's end once the captures below it were archived. */
    private volatile long markTarget = -1;
    private final long[] endsAtMark;
    private volatile Throwable failure;
    /** Someone waits for the archiver: it archives what is pending without letting more gather. */
    private volatile boolean hurry;
    /** See {@link #rest}. */
    private volatile boolean archiverResting;

    PendingCaptures(ArchiveLock lock, Archiver archiver, ArchiveLevel[] levels, PageSlots slots, OpenViews views, RetentionEnforcer retention) {
        this.lock = lock;
        this.archiver = archiver;
        this.levels = levels;
        this.slots = slots;
        this.views = views;
        this.retention = retention;
        this.endsAtMark = new long[levels.length];
    }

    /** Queues capture {@code p} behind every earlier one, waking a resting archiver. Caller holds the lock. */
    void add(Pending p) {
        pending.addLast(p);
        if (archiverResting) {
            archiverResting = false;
            archiver.wake();
        }
    }

    /**
     * Whether the archiver may rest (park past its idle period): true when no capture is pending. The flag is set
     * before the queue is looked at under the lock, and {@link #add} reads it after queueing under the lock, so a
     * capture either is seen here or sees the flag and wakes the archiver. Archiver thread.
     */
    boolean rest() {
        archiverResting = true;
        lock.lock();
        try {
            if (pending.isEmpty()) return true;
        } finally {
            lock.unlock();
        }
        archiverResting = false;
        return false;
    }

    /** Set while the archiver rests or is about to: the next queued capture wakes it. */
    boolean archiverResting() {
        return archiverResting;
    }

    /**
     * Whether the archiver should archive now rather than let captures gather (a pack of diffs written with a handful
     * of entries wastes most of its record): a batch's worth is pending, someone waits for the archiver, or nothing
     * is pending at all. Archiver thread.
     */
    boolean due() {
        if (hurry || markTarget > archived) return true;
        lock.lock();
        try {
            return pending.isEmpty() || pending.size() >= GATHER;
        } finally {
            lock.unlock();
        }
    }

    /** Feeds a view being built the pending captures its level records for its snapshot or a later one. Caller holds the lock. */
    void feed(SnapshotPageTable spt) {
        for (Pending p : pending) {
            if (p.recordedAt(spt.level()) && p.stamps()[spt.level() - 1] >= spt.snapshot()) spt.map().putIfAbsent(p.pageId(), SnapshotPageTable.pendingLocation(p.slot()));
        }
    }

    /**
     * Archives the oldest pending captures, up to a batch: their pages go to the Pagelog in one write, then their
     * mappings to the Maplog, in capture order. False when none was pending. Archiver thread only. The volumes are
     * written holding neither of the archive's locks (their own monitors order the writes with a checkpoint's fsync,
     * and nothing waits for them under the state lock), so a declaration never waits for the archiver's disk writes;
     * the Maplog appends take the append gate first, so a checkpoint's fsync never finds the archiver half-way with
     * the state lock held, and stay in memory: the Maplog writes out its buffers before, holding neither lock.
     */
    boolean archiveNext() {
        List<Pending> batch = new ArrayList<>(ARCHIVE_BATCH);
        lock.lock();
        try {
            for (Pending p : pending) {
                if (batch.size() == ARCHIVE_BATCH) break;
                if (p.number() == markTarget && !batch.isEmpty()) break; // a batch never straddles the mark: its addresses are read between
                batch.add(p);
            }
        } finally {
            lock.unlock();
        }
        hurry = false; // a waiter still waiting asks again
        if (batch.isEmpty()) return false;
        boolean[] touched = new boolean[levels.length];
        for (Pending p : batch) {
            p.archiveTo(levels[p.volume() - 1].volume, slots);
            touched[p.volume() - 1] = true;
        }
        for (int j = 0; j < levels.length; j++) if (touched[j]) levels[j].volume.writeStaged();
        for (Pending p : batch) p.resolve(levels[p.volume() - 1].volume);
        // the Maplog writes out its buffers (creating a new part, with fsyncs) holding neither lock: that changes no
        // count a checkpoint mark records, and the file's monitor orders it with the checkpoint's fsync of the file
        for (ArchiveLevel l : levels) l.maplog.makeRoom(batch.size());
        lock.lockWithAppends();
        try {
            for (Pending p : batch) {
                long location = ArchiveEncoding.location(p.volume(), p.address);
                for (ArchiveLevel l : levels) {
                    if (!p.recordedAt(l.level)) continue;
                    if (l.maplog.size() != p.positions()[l.level - 1])
                        throw new IllegalStateException("level " + l.level + " Maplog at " + l.maplog.size() + ", mapping due at " + p.positions()[l.level - 1]);
                    l.maplog.append(p.pageId(), p.stamps()[l.level - 1], location);
                }
                views.onArchived(p.pageId(), SnapshotPageTable.pendingLocation(p.slot()), location);
                pending.removeFirst();
                slots.free(p.slot());
                retention.captured(p.hi(), location);
            }
            long next = batch.get(batch.size() - 1).number() + 1;
            if (next == markTarget) noteEndsAtMark();
            archived = next;
        } finally {
            lock.unlockWithAppends();
        }
        return true;
    }

    /**
     * A checkpoint mark covers the captures numbered below {@code target}: the volumes' ends once they are archived are
     * the mark's addresses. Known now when every earlier capture is archived already; else noted by the archiver when
     * it reaches the mark (its batches stop there). Caller holds the lock; no capture is being made (the checkpoint
     * write lock is held).
     */
    void markAt(long target) {
        markTarget = target;
        if (archived == target) noteEndsAtMark();
    }

    /** Every volume's end at the latest mark, once {@link #awaitArchived} of its target returned. Caller holds the lock. */
    long[] endsAtMark() {
        return endsAtMark.clone();
    }

    private void noteEndsAtMark() {
        for (ArchiveLevel l : levels) endsAtMark[l.level - 1] = l.volume.end();
    }

    /** Waits until every capture numbered below {@code target} is archived (a checkpoint, for its mark). */
    void awaitArchived(long target) {
        long start = System.nanoTime();
        while (archived < target) {
            awaitProgress();
            pauseUnlessOverdue(start, "the archiver did not catch up with the checkpoint mark");
        }
    }

    /** One wait for the archiver: throws its failure, else hurries it and wakes it (or steps it, when stepped by hand). */
    void awaitProgress() {
        checkUsable();
        hurry = true;
        archiver.awaitProgress();
    }

    /** Pauses a wait begun at {@code startNanos} (holding no lock); past the limit, gives up with {@code overdue}. */
    static void pauseUnlessOverdue(long startNanos, String overdue) {
        if (System.nanoTime() - startNanos > WAIT_LIMIT_NANOS) throw new StorageException(overdue);
        LockSupport.parkNanos(20_000);
    }

    /** The archiver failed: every later capture and checkpoint is told. */
    void failed(Throwable t) {
        failure = t;
    }

    private void checkUsable() {
        Throwable f = failure;
        if (f != null) throw new StorageException("the snapshot archiver failed earlier (" + f + ")", null, f);
    }
}
