package dev.varve.checkpoint;

import dev.varve.core.memory.PageMemory;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * Slows writers by the checkpoint buffer's fill rate against the checkpoint's progress (IEP-113's fix for the
 * exponential back-off that stalled writers for a whole recovery-file phase): while the share of the buffer in
 * use stays below the share of the checkpoint already written, writers run free; past it, each write parks for a
 * time that grows with the excess. Also waits for data-region head-room. Time spent here is a metric.
 */
public final class Throttle {
    /** Below this fill the buffer cannot overflow before the checkpoint ends; no throttling. */
    private static final double FREE_FILL = 0.5;
    private static final long MAX_PARK_NANOS = 1_000_000;

    private final PageMemory memory;
    private final LongAdder throttledNanos = new LongAdder();
    private final AtomicInteger pagesDone = new AtomicInteger();
    private volatile int pagesTotal;
    private volatile boolean active;

    Throttle(PageMemory memory) {
        this.memory = memory;
    }

    /**
     * Before a write that may dirty about {@code pages} pages: reserves data-region head-room (waiting for a
     * checkpoint if needed) and applies checkpoint-buffer throttling. Pair with {@link #afterWrite}. Call holding
     * no lock that the checkpointer takes.
     */
    public void beforeWrite(int pages) {
        if (!memory.tryReserve(pages)) {
            long t0 = System.nanoTime();
            memory.awaitHeadroom(pages);
            throttledNanos.add(System.nanoTime() - t0);
        }
        if (!active) return;
        int capacity = memory.checkpointBufferCapacity();
        double fill = (double) memory.checkpointBufferUsed() / capacity;
        if (fill < FREE_FILL) return;
        int total = pagesTotal;
        double progress = total == 0 ? 1 : (double) pagesDone.get() / total;
        if (fill <= progress) return;
        long park = (long) (MAX_PARK_NANOS * Math.min(1.0, (fill - Math.max(FREE_FILL, progress)) / (1 - FREE_FILL)));
        long t0 = System.nanoTime();
        LockSupport.parkNanos(Math.max(1_000, park));
        throttledNanos.add(System.nanoTime() - t0);
    }

    /** Returns the head-room reserved by {@link #beforeWrite}. */
    public void afterWrite(int pages) {
        memory.releaseHeadroom(pages);
    }

    /** Total time writers spent throttled, since open. */
    public long throttledNanos() {
        return throttledNanos.sum();
    }

    void begin(int total) {
        pagesDone.set(0);
        pagesTotal = total;
        active = true;
    }

    void pageWritten() {
        pagesDone.incrementAndGet();
    }

    void end() {
        active = false;
    }
}
