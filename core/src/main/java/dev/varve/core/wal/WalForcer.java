package dev.varve.core.wal;

import dev.varve.core.io.StorageException;
import java.util.Iterator;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.UnaryOperator;

/**
 * The force itself: what of the WAL one force covers, and forcing it. {@link WalGroupCommit} decides which thread
 * forces and when; this decides what that thread forces — everything published so far, from where the last force
 * ended — and where in a segment the bytes no force has made durable begin.
 *
 * <p>Design note. A force reads the segment being written and the position in it as a pair, under
 * {@link #segmentView} (its own monitor, held for those two fields, never for IO), not under the WAL's append lock: a
 * forcing thread never takes the append lock, so a switch under LOG_ONLY never waits for a force (the checkpointer's
 * {@code msync} of a whole period of records took up to a second on a busy disk while every writer stood behind the
 * switching one). The WAL keeps its own reference to the segment for appending, under the append lock; this view of
 * it moves with the position, in {@link #makeCurrent}. Kept apart from {@link Wal} so the WAL reads as the append
 * path.
 */
final class WalForcer {
    private final long segmentSize;
    private final WalPublication publication;
    private final WalGroupCommit groupCommit;
    private final WalSegmentCloser closer;
    /** Throws when the WAL is closed or failed: a force then has nothing it may vouch for. */
    private final Runnable checkWritable;
    private final UnaryOperator<StorageException> onFailure;
    /**
     * Guards {@link #current} together with the position moving into it, so a force reads a segment and a target that
     * belong together; held only for those few fields, never for IO.
     */
    private final Object segmentView = new Object();
    private WalSegment current; // segmentView: the segment the position is in
    /** Segments switched away from, sealed and whole in their files, waiting to be closed ({@link #retire}). */
    private final ConcurrentLinkedQueue<WalSegment> retired = new ConcurrentLinkedQueue<>();

    /**
     * {@code current} is the segment being written; {@code checkWritable} throws when the WAL refuses work, and
     * {@code onFailure} records a failure of a force (the WAL then refuses work) and returns it.
     */
    WalForcer(long segmentSize, WalPublication publication, WalGroupCommit groupCommit, WalSegmentCloser closer,
            WalSegment current, Runnable checkWritable, UnaryOperator<StorageException> onFailure) {
        this.segmentSize = segmentSize;
        this.publication = publication;
        this.groupCommit = groupCommit;
        this.closer = closer;
        this.current = current;
        this.checkWritable = checkWritable;
        this.onFailure = onFailure;
    }

    /** Forces everything appended so far; returns the LSN below which every record is now durable. Holds the force lock. */
    long forceAppended() {
        checkWritable.run();
        closeRetired(); // before this force picks its segment, which is then never one of them
        long target;
        WalSegment seg;
        synchronized (segmentView) { // target is in seg, or seg's end when seg is full
            target = publication.position();
            seg = current;
        }
        long from = groupCommit.durableLsn();
        if (target <= from) return from;
        // the previous segment's records (a mapped segment's switch leaves them to the closer, begun before the switch
        // made the next segment current) before this one's. The switch pending may be seg's own, begun before the
        // switch made the next segment current: then the closer made all of seg durable, target included, and seg
        // may be closed already — finish ran the switch's second half on this thread, whose retire then took the
        // force lock this thread holds. A segment switched away from after the pick is not closed before this force
        // ends: the closer's retire of it finds the lock taken.
        if (WalSegmentDescriptor.segmentIndex(from, segmentSize) < seg.index && closer.finish() >= seg.index) return target;
        // target may be the next segment's first LSN when current is full
        int to = WalSegmentDescriptor.segmentIndex(target, segmentSize) > seg.index
                ? (int) segmentSize : WalSegmentDescriptor.offset(target, segmentSize);
        int start = WalSegmentDescriptor.segmentIndex(from, segmentSize) < seg.index
                ? 0 : WalSegmentDescriptor.offset(from, segmentSize);
        try {
            seg.force(start, to);
        } catch (StorageException e) {
            throw onFailure.apply(e);
        }
        return target;
    }

    /**
     * Closes {@code seg}, sealed and whole in its file, truncating the file its copy replaced ({@link WalSegment#retire})
     * once no force can read its buffer any more: under the force lock, which every force holds, and once forces moved to a later
     * segment. Now when the lock is free, else at the next force: the closer, which calls this, must not wait for the
     * lock, as a force holding it may be waiting for the closer ({@link #forceAppended}).
     */
    void retire(WalSegment seg) {
        retired.add(seg);
        if (!groupCommit.tryLock()) return;
        try {
            closeRetired();
        } finally {
            groupCommit.unlock();
        }
    }

    /** Closes the retired segments forces have moved past. Caller holds the force lock. */
    void closeRetired() {
        if (retired.isEmpty()) return; // every force asks: most find none
        long currentIndex;
        synchronized (segmentView) {
            currentIndex = current.index;
        }
        for (Iterator<WalSegment> it = retired.iterator(); it.hasNext(); ) {
            WalSegment seg = it.next();
            if (seg.index >= currentIndex) continue;
            it.remove();
            seg.retire();
        }
    }

    /** Where {@code seg}'s bytes that no force has made durable begin: [0, durableLsn) needs none. */
    int notYetDurable(WalSegment seg) {
        long durable = groupCommit.durableLsn(); // only grows, and only once its force returned
        long durableIndex = WalSegmentDescriptor.segmentIndex(durable, segmentSize);
        return durableIndex < seg.index ? 0 : durableIndex > seg.index ? (int) segmentSize
                : WalSegmentDescriptor.offset(durable, segmentSize);
    }

    /** Forces move to {@code next}: the position moves to its first LSN, which its first record waits for in publish. */
    void makeCurrent(WalSegment next) {
        long first = WalSegmentDescriptor.firstLsn(next.index, segmentSize);
        synchronized (segmentView) {
            current = next;
            publication.advance(first);
        }
    }
}
