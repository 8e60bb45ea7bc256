package dev.varve.core.memory;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The slots a {@link PageSlots} pool was given back, handed out again last in, first out: the slot given back last is
 * the one whose memory is most likely still in the caches. Each capture or copy-on-write copies a page into a slot,
 * so a pool handing its slots out in the order they came back (a queue) walks its writers through every slot it ever
 * had out at once — megabytes, under a snapshot after every batch — and each copy then misses the cache and evicts
 * what the writer's descents need: writers declaring a snapshot after every batch spent some 15% more CPU per batch
 * with a queue than with this stack (docs/performance.md, "The capture buffer reused last in, first out").
 *
 * <p>A Treiber stack over an array: {@code below[s]} is the slot under slot {@code s}, plus one (0: none), and the
 * head holds the top slot, plus one, in its low half and a count of its changes in its high half, so that a pop whose
 * top was popped and pushed back meanwhile (with another slot below it) fails its compare-and-set rather than
 * installing a stale {@code below} (the ABA problem; the count would have to wrap all 2^32 values between one
 * thread's read and its compare-and-set). {@code below} is read and written plainly: a push writes it before the
 * compare-and-set that publishes the slot, and a pop reads it after reading the head that slot's push set; a value read
 * while another thread changes it belongs to a head that has moved on, and the pop's compare-and-set fails.
 */
final class FreeSlots {
    private final int[] below;
    private final AtomicLong head = new AtomicLong();
    private final AtomicInteger size = new AtomicInteger();

    /** A stack for slots {@code [0, capacity)}, empty. */
    FreeSlots(int capacity) {
        this.below = new int[capacity];
    }

    /** Gives {@code slot} back; it must be out (handed out and not given back since). */
    void push(int slot) {
        long h;
        do {
            h = head.get();
            below[slot] = (int) h;
        } while (!head.compareAndSet(h, next(h, slot + 1)));
        size.incrementAndGet();
    }

    /** The slot given back last, now out again; -1 when none is. */
    int pop() {
        while (true) {
            long h = head.get();
            int top = (int) h;
            if (top == 0) return -1;
            if (tryPop(h, below[top - 1])) return top - 1;
        }
    }

    /**
     * Pops the top slot of head {@code h}, read together with {@code under}, the slot below it then; false when the
     * head has moved on since (the caller reads it again). Apart from {@link #pop} for the test of the ABA case.
     */
    boolean tryPop(long h, int under) {
        if (!head.compareAndSet(h, next(h, under))) return false;
        size.decrementAndGet();
        return true;
    }

    /** The head now: the top slot plus one (0: empty) in its low half. */
    long head() {
        return head.get();
    }

    /** The slot below {@code slot}, plus one (0: none), as the last push of {@code slot} left it. */
    int below(int slot) {
        return below[slot];
    }

    /** Slots given back and not handed out again (a moment's count while others push and pop). */
    int size() {
        return Math.max(0, size.get()); // a pop may count down before the push it took from counted up
    }

    /** The head after {@code h} with {@code top} (a slot plus one, or 0) on top: its change count moved on. */
    private static long next(long h, int top) {
        return ((h >>> 32) + 1) << 32 | (top & 0xFFFF_FFFFL);
    }
}
