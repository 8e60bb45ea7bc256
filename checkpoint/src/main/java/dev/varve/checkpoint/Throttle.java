package dev.varve.checkpoint;

import dev.varve.core.io.StorageException;
import dev.varve.core.memory.PageMemory;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * Slows writers while a checkpoint runs, by two rules, each write parking for a time that grows with the larger
 * excess. The checkpoint buffer's fill against the checkpoint's progress (IEP-113's fix for the exponential back-off
 * that stalled writers for a whole recovery-file phase): while the share of the buffer in use stays below the share
 * of the checkpoint already written, writers run free. A checkpoint whose unwritten pages fit in the buffer never
 * throttles by it: each of them takes one copy at most (a recovery-file phase, which writes no page, parked writers at
 * 10,000 puts/s with the buffer half full and nothing that could fill the rest). And the data region: the frames free
 * when the checkpoint began are handed out in step with its progress, so writers that dirty pages faster than the
 * checkpoint writes them are spread over it rather than stopped when the region is full ({@link #regionPark}).
 *
 * <p>Also waits for data-region head-room, and reserves room in the checkpoint buffer for the copies-on-write a write
 * may make: a writer that found the buffer full half-way would wait for a slot while holding the latches of the pages
 * it changed already, and a checkpointer copying one of those pages would wait for it — a deadlock (seen in
 * ConcurrencyTest with a 1 MiB buffer: a put freeing an old value's overflow chain under its leaf's latch). Waiting
 * here, before the write takes any lock, the writer holds nothing the checkpointer needs. Time spent here is a metric.
 */
public final class Throttle {
    /** Below this fill writers run free whatever the progress (IEP-113's free zone; a heuristic, unlike the pages-left rule). */
    private static final double FREE_FILL = 0.5;
    private static final long MAX_PARK_NANOS = 1_000_000;
    /** How long a write waits for room in the checkpoint buffer before it gives up. */
    private static final long COPIES_WAIT_LIMIT_NANOS = TimeUnit.SECONDS.toNanos(120);

    private final PageMemory memory;
    private final LongAdder throttledNanos = new LongAdder();
    private final AtomicInteger pagesDone = new AtomicInteger();
    private volatile int pagesTotal;
    private volatile boolean active;
    /** The running checkpoint's steps: each page's recovery-file entry (when it writes them) and each page written. */
    private volatile int stepsTotal;
    private final AtomicInteger stepsDone = new AtomicInteger();
    /** Frames held (dirty, or the checkpoint's only image) when the running checkpoint began. */
    private volatile long heldAtBegin;
    /** Checkpoint-buffer slots reserved by writes in flight ({@link #reserveCopies}). */
    private final AtomicLong reservedCopies = new AtomicLong();

    /** Throws when the checkpointer failed: no checkpoint will free the room or slots a writer would wait for. */
    private final Runnable checkpointsPossible;

    Throttle(PageMemory memory) {
        this(memory, () -> { });
    }

    Throttle(PageMemory memory, Runnable checkpointsPossible) {
        this.memory = memory;
        this.checkpointsPossible = checkpointsPossible;
    }

    /**
     * Before a write that may dirty about {@code pages} pages: reserves data-region head-room (waiting for a
     * checkpoint if needed) and checkpoint-buffer room, then paces the write (see the class comment). Pair with
     * {@link #afterWrite}. Call holding no lock that the checkpointer takes.
     */
    public void beforeWrite(int pages) {
        if (!memory.tryReserve(pages)) {
            long t0 = System.nanoTime();
            memory.awaitHeadroom(pages, checkpointsPossible);
            throttledNanos.add(System.nanoTime() - t0);
        }
        try {
            reserveCopies(copies(pages));
        } catch (RuntimeException | Error e) {
            memory.releaseHeadroom(pages);
            throw e;
        }
        if (!active) return;
        long park = Math.max(bufferPark(), regionPark());
        if (park == 0) return;
        long t0 = System.nanoTime();
        LockSupport.parkNanos(Math.max(1_000, park));
        throttledNanos.add(System.nanoTime() - t0);
    }

    /**
     * A write's park for the checkpoint buffer's fill: none while the buffer is at most half full or no fuller than
     * the checkpoint's progress, or when the pages it has still to write fit in the buffer.
     */
    private long bufferPark() {
        int capacity = memory.checkpointBufferCapacity();
        int total = pagesTotal;
        int done = pagesDone.get();
        // a page takes one copy at most per checkpoint, and gives it back once written: when the pages still to write
        // fit in the buffer, it cannot overflow, whatever the writers do
        if (total - done <= capacity) return 0;
        double fill = (double) memory.checkpointBufferUsed() / capacity;
        if (fill < FREE_FILL) return 0;
        double progress = (double) done / total;
        if (fill <= progress) return 0;
        return (long) (MAX_PARK_NANOS * Math.min(1.0, (fill - Math.max(FREE_FILL, progress)) / (1 - FREE_FILL)));
    }

    /**
     * A write's park for the data region: the pages dirtied since the mark (the next checkpoint's) may grow in step
     * with this checkpoint's steps done, to at most the frames free when it began. Writers who dirty pages faster than
     * the checkpoint writes them are thus spread over it, instead of running free until every frame is held and then
     * waiting for its page writes all at once — half a second for two writers with recovery files. Counting the pages
     * dirtied, not the frames held, matters: the frames a checkpoint frees as it writes its pages would let the pages
     * dirtied reach every frame by its end, and leave the next checkpoint no room to pace. None while the region is at
     * most half held.
     */
    private long regionPark() {
        long limit = memory.headroomLimit();
        if (memory.heldPages() < FREE_FILL * limit) return 0;
        long budget = limit - heldAtBegin;
        if (budget <= 0) return 0; // nothing to hand out: writers wait for head-room in beforeWrite
        double allowed = (double) budget * stepsDone.get() / stepsTotal;
        int dirtied = memory.dirtyPages();
        if (dirtied <= allowed) return 0;
        return (long) (MAX_PARK_NANOS * Math.min(1.0, (dirtied - allowed) / budget));
    }

    /** Returns the head-room and the checkpoint-buffer room reserved by {@link #beforeWrite}. */
    public void afterWrite(int pages) {
        reservedCopies.addAndGet(-copies(pages));
        memory.releaseHeadroom(pages);
    }

    /**
     * Copies-on-write a write of {@code pages} pages may make (its head-room estimate, generous at 16 pages an
     * operation), at most half the buffer: a large batch then waits for half of it, not for every slot to be free and
     * no other write in flight, which concurrent writers could put off until the wait limit.
     */
    private int copies(int pages) {
        return Math.min(pages, Math.max(1, memory.checkpointBufferCapacity() / 2));
    }

    /**
     * Waits until the checkpoint buffer has {@code copies} slots that no other write in flight has reserved, then
     * reserves them. Slots in use count as well as reserved ones (a write's copies are counted twice until it ends):
     * the room is never overstated. Slots free as the checkpoint writes pages, and the checkpointer never waits for a
     * writer waiting here.
     */
    private void reserveCopies(int copies) {
        int capacity = memory.checkpointBufferCapacity();
        long start = 0;
        while (true) {
            long r = reservedCopies.get();
            if (memory.checkpointBufferUsed() + r + copies <= capacity) {
                if (reservedCopies.compareAndSet(r, r + copies)) break;
                continue;
            }
            checkpointsPossible.run();
            long now = System.nanoTime();
            if (start == 0) start = now;
            else if (now - start > COPIES_WAIT_LIMIT_NANOS)
                throw new StorageException("gave up waiting " + TimeUnit.NANOSECONDS.toSeconds(COPIES_WAIT_LIMIT_NANOS) + " s for " + copies
                        + " free checkpoint-buffer slots of " + capacity + " (is the checkpointer stuck or failed?)");
            LockSupport.parkNanos(50_000);
        }
        if (start != 0) throttledNanos.add(System.nanoTime() - start);
    }

    /**
     * Total time writers spent throttled, since open: waiting here, and inside a change for a checkpoint-buffer slot
     * when it copies more pages than it reserved ({@link PageMemory#slotWaitNanos}).
     */
    public long throttledNanos() {
        return throttledNanos.sum() + memory.slotWaitNanos();
    }

    /** A checkpoint of {@code total} pages begins; {@code recoveryFiles}: it writes their entries first. */
    void begin(int total, boolean recoveryFiles) {
        pagesDone.set(0);
        pagesTotal = total;
        stepsDone.set(0);
        stepsTotal = Math.max(1, recoveryFiles ? 2 * total : total);
        heldAtBegin = memory.heldPages();
        active = true;
    }

    /** A page's recovery-file entry is written: a step of the checkpoint. */
    void entryWritten() {
        stepsDone.incrementAndGet();
    }

    /** A page is written into its page file (and its copy-on-write slot freed). */
    void pageWritten() {
        stepsDone.incrementAndGet();
        pagesDone.incrementAndGet();
    }

    void end() {
        active = false;
    }
}
