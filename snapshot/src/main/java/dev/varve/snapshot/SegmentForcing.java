package dev.varve.snapshot;

import dev.varve.core.io.StorageException;
import dev.varve.core.util.ThreadEnd;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;

/**
 * Which of a {@link Pagelog}'s segments were written since their last force, and their forcing: the archiver leaves
 * filled segments unforced (an fsync on its path would stall the captures behind it), a short-lived thread forces each
 * once the next one begins ({@link #filled}), and the checkpoint forces whatever is still unforced. Past
 * {@link #MAX_UNFORCED_FILLED} unforced filled segments the archiver forces the oldest itself. The bookkeeping is
 * guarded by the volume's monitor ({@code lock}), which every caller but {@link #forceFilled} and the forcing thread
 * already holds.
 *
 * <p>Why ahead of the checkpoint: with a snapshot every 10 ms a store archived 130-150 MB/s, a 64 MiB segment every
 * half second, and the checkpoint (every 30 s by default) came far too late, so from the ninth segment on the archiver
 * fsynced one itself at every new segment, 46-62 ms each, with the capture buffer filling and the writer waiting
 * behind it (docs/performance.md, What is left of the writer's sleeps). A force ahead that fails is reported by every
 * later force (the checkpoint's included, which then fails): a failed fsync may have lost the segment's write-back,
 * and a second fsync can succeed without it.
 */
final class SegmentForcing {
    /** Filled segments left unforced for the next checkpoint, at most; each holds a descriptor until forced. */
    static final int MAX_UNFORCED_FILLED = 8;
    private final Object lock;
    private final Map<Integer, PartFile> segments;
    private final DescriptorBudget budget;
    private final Path dir;
    /** The volume's first segment not reclaimed, and its last one. */
    private final IntSupplier firstSegment;
    private final IntSupplier lastSegment;
    /** The first segment written since the last force; the segments from it on are forced by the next flush. */
    private int unforcedFrom = Integer.MAX_VALUE;
    private final String threadName;
    // guarded by lock: the filled segments handed to the forcing thread go up to forceAheadTo, it has taken those up to
    // forcedAhead (NONE_HANDED before the first), and it runs while forcingAhead is not null; closed once the volume closes
    private static final int NONE_HANDED = Integer.MIN_VALUE;
    /** How long the volume's close waits for a force ahead under way. */
    private static final long CLOSE_WAIT_NANOS = TimeUnit.MINUTES.toNanos(1);
    private int forceAheadTo = -1;
    private int forcedAhead = NONE_HANDED;
    private Thread forcingAhead;
    private boolean closed;
    /** The first force ahead that failed, reported by every force after it. */
    private volatile StorageException failedAhead;

    SegmentForcing(Object lock, Map<Integer, PartFile> segments, DescriptorBudget budget, Path dir, IntSupplier firstSegment, IntSupplier lastSegment,
                   String threadName) {
        this.lock = lock;
        this.segments = segments;
        this.budget = budget;
        this.dir = dir;
        this.firstSegment = firstSegment;
        this.lastSegment = lastSegment;
        this.threadName = threadName;
    }

    /**
     * Holding the volume's monitor: segment {@code seg} is filled (the next one begins), so a thread of its own forces
     * it, and any filled before it not forced yet, while the archiver goes on. A thread the OS refuses leaves them to
     * the checkpoint, as before there was one.
     */
    void filled(int seg) {
        if (forcedAhead == NONE_HANDED) forcedAhead = seg - 1; // those before were durable at open
        forceAheadTo = Math.max(forceAheadTo, seg);
        if (forcingAhead != null || closed) return; // the running thread takes it too
        Thread t = new Thread(this::forceAhead, threadName);
        t.setDaemon(true);
        forcingAhead = t;
        try {
            t.start();
        } catch (OutOfMemoryError e) {
            forcingAhead = null; // unable to create native thread: the checkpoint forces them
        }
    }

    /**
     * The forcing thread: forces the filled segments handed to it in order, outside the volume's monitor. It leaves
     * {@link #unforcedFrom} alone: a later force of a segment it forced finds nothing written since and makes no call.
     */
    private void forceAhead() {
        try {
            while (true) {
                int s;
                PartFile f;
                synchronized (lock) {
                    s = Math.max(forcedAhead + 1, firstSegment.getAsInt());
                    if (s > forceAheadTo || failedAhead != null) { // at close too, once it forced what it was handed
                        // in the same hold as the check: a segment handed over after it starts a thread of its own
                        forcingAhead = null;
                        return;
                    }
                    forcedAhead = s;
                    f = segments.get(s);
                }
                if (f != null) forceAhead(s, f);
            }
        } finally {
            synchronized (lock) { // ended by an error: the next segment filled starts another
                if (forcingAhead == Thread.currentThread()) forcingAhead = null;
            }
        }
    }

    /** Forces segment {@code s}; a failure is kept for every later force (and ends the forcing thread). */
    private void forceAhead(int s, PartFile f) {
        try {
            f.force();
        } catch (IOException | RuntimeException e) {
            synchronized (lock) { // reclamation closes and removes a segment holding the monitor: then it was not needed
                if (segments.get(s) == f) failedAhead = new StorageException("Pagelog fsync failed: " + e.getMessage(), f.path(), e);
            }
            return;
        }
        try {
            budget.trim(); // forced, it may let its descriptor go
        } catch (IOException e) {
            failedAhead = new StorageException("cannot close a Pagelog segment: " + e.getMessage(), dir, e);
        }
    }

    /** A force ahead failed: so does this one, naming that segment's file. */
    private void checkAhead() {
        StorageException f = failedAhead;
        if (f != null) throw new StorageException("forcing a filled Pagelog segment ahead of the checkpoint failed: " + f.getMessage(), f.file(), f);
    }

    /**
     * The volume closes: waits for the forces ahead it was handed (no thread outlives the store, and a segment filled
     * before the close is durable after it), and starts none after.
     */
    void close() {
        Thread running;
        synchronized (lock) {
            closed = true;
            running = forcingAhead;
        }
        if (running != null) ThreadEnd.await(running, System.nanoTime() + CLOSE_WAIT_NANOS); // a hung fsync: its daemon thread is left
    }

    /** Holding the volume's monitor: segment {@code seg} was written, not forced. */
    void written(int seg) {
        unforcedFrom = Math.min(unforcedFrom, seg);
    }

    /**
     * Holding the volume's monitor. A segment written since its last force keeps its descriptor (its fsync must go
     * through it), so the segments filled since the last checkpoint are bounded here, not by the checkpoint: past
     * {@link #MAX_UNFORCED_FILLED} of them the oldest is forced when segment {@code seg} begins (an fsync on the
     * archiver's path again, but only when more than that many segments fill between two checkpoints).
     */
    void forceOldestFilled(int seg) throws IOException {
        checkAhead();
        while (unforcedFrom != Integer.MAX_VALUE && seg - Math.max(unforcedFrom, firstSegment.getAsInt()) > MAX_UNFORCED_FILLED) {
            int oldest = Math.max(unforcedFrom, firstSegment.getAsInt());
            PartFile f = segments.get(oldest);
            if (f != null) f.force();
            unforcedFrom = oldest + 1;
        }
    }

    /**
     * Forces the segments filled since the last force without the volume's monitor: nothing writes them any more, and
     * the archiver goes on appending to the last one meanwhile. The checkpoint's flush calls it before it stops the
     * archiver's appends for {@link Pagelog#force}, which is then left with the last segment's records to sync.
     */
    void forceFilled() {
        checkAhead();
        int from;
        int to;
        synchronized (lock) {
            from = Math.max(firstSegment.getAsInt(), unforcedFrom);
            to = lastSegment.getAsInt() - 1;
        }
        for (int s = from; s <= to; s++) {
            PartFile f = segments.get(s);
            if (f == null) continue; // reclaimed meanwhile: nothing of it is needed
            try {
                f.force();
            } catch (IOException e) {
                throw new StorageException("Pagelog fsync failed: " + e.getMessage(), f.path(), e);
            }
        }
        try {
            budget.trim(); // forced, they may let their descriptors go
        } catch (IOException e) {
            throw new StorageException("cannot close a Pagelog segment: " + e.getMessage(), dir, e);
        }
        synchronized (lock) {
            if (unforcedFrom <= to) unforcedFrom = to + 1; // the archiver only appends to segments after to
        }
    }

    /** Holding the volume's monitor: forces the segments written since the last force, up to and including {@code upTo}. */
    void forceSegments(int upTo) {
        checkAhead();
        if (segments.isEmpty()) return;
        for (int s = Math.max(firstSegment.getAsInt(), Math.min(unforcedFrom, upTo + 1)); s <= upTo; s++) {
            try {
                segments.get(s).force();
            } catch (IOException e) {
                throw new StorageException("Pagelog fsync failed: " + e.getMessage(), segments.get(s).path(), e);
            }
        }
        unforcedFrom = Integer.MAX_VALUE;
    }
}
