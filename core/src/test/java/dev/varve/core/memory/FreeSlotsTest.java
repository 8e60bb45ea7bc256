package dev.varve.core.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The free-slot stack hands slots out last in, first out, and never the same slot to two takers at once. */
@Timeout(120)
class FreeSlotsTest {
    @Test
    void slotsComeBackLastInFirstOut() {
        FreeSlots free = new FreeSlots(8);
        assertEquals(-1, free.pop());
        for (int s : new int[] {3, 0, 7}) free.push(s);
        assertEquals(3, free.size());
        assertEquals(7, free.pop());
        free.push(5);
        assertEquals(5, free.pop());
        assertEquals(0, free.pop());
        assertEquals(3, free.pop());
        assertEquals(-1, free.pop());
        assertEquals(0, free.size());
    }

    /**
     * The ABA case, step by step: a pop reads slot 2 on top with slot 1 below it; meanwhile others pop 2 and 1 and push
     * 2 back, now with slot 0 below it. The head shows slot 2 on top again, but the pop's compare-and-set must fail:
     * had it succeeded, slot 1 — out with another taker — would be on top of the stack.
     */
    @Test
    void aPopWhoseTopWasPoppedAndPushedBackMeanwhileFails() {
        FreeSlots free = new FreeSlots(4);
        for (int s = 0; s < 3; s++) free.push(s);
        long h = free.head();
        int under = free.below((int) h - 1);
        assertEquals(2, (int) h - 1);
        assertEquals(1 + 1, under, "slot 1 below slot 2");
        assertEquals(2, free.pop());
        assertEquals(1, free.pop());
        free.push(2);
        assertEquals(2, (int) free.head() - 1, "slot 2 on top again");
        assertFalse(free.tryPop(h, under), "the head moved on, though slot 2 is on top again");
        assertEquals(2, free.pop());
        assertEquals(0, free.pop());
        assertEquals(-1, free.pop(), "slot 1 is out, not on the stack");
    }

    /**
     * Threads pop slots, hold each for a moment, and push it back, many times over: a slot two threads held at once
     * (a pop that installed a stale slot below, the ABA problem) or one lost from the stack fails the test.
     */
    @Test
    void noSlotIsHeldTwiceOrLostUnderConcurrentPopsAndPushes() throws Exception {
        int slots = 16;
        int threads = 4;
        int rounds = 200_000;
        FreeSlots free = new FreeSlots(slots);
        for (int s = 0; s < slots; s++) free.push(s);
        AtomicIntegerArray holder = new AtomicIntegerArray(slots); // 0: free, else the holding thread's number + 1
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int me = t + 1;
                done.add(pool.submit(() -> {
                    start.await();
                    int[] held = new int[3];
                    for (int r = 0; r < rounds; r++) {
                        int n = 0;
                        for (int k = 0; k < held.length; k++) { // take up to three, so the stack's top keeps moving
                            int s = free.pop();
                            if (s < 0) break;
                            assertTrue(holder.compareAndSet(s, 0, me), "slot " + s + " handed out while thread " + holder.get(s) + " held it");
                            held[n++] = s;
                        }
                        for (int k = n - 1; k >= 0; k--) {
                            holder.set(held[k], 0);
                            free.push(held[k]);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) f.get();
        } finally {
            pool.shutdownNow();
        }
        boolean[] seen = new boolean[slots];
        for (int s; (s = free.pop()) >= 0; ) {
            assertTrue(!seen[s], "slot " + s + " twice on the stack");
            seen[s] = true;
        }
        for (int s = 0; s < slots; s++) assertTrue(seen[s], "slot " + s + " lost from the stack");
    }
}
