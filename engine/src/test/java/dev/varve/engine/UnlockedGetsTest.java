package dev.varve.engine;

import static dev.varve.engine.FixtureSupport.check;
import static dev.varve.engine.FixtureSupport.show;
import static dev.varve.engine.FixtureSupport.stamped;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.VarveConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Gets read a partition without its lock while no writer holds it ({@link PartitionHandle}): here they race one
 * writer of the same partition whose puts and removes split, merge and rewrite its leaves, in a region small enough
 * that pages are evicted and loaded under the readers. A get must return exactly the key's last value whenever no
 * write of that key was in flight around it, and otherwise a value that was the key's at some moment of the get
 * (stamped: a torn, mixed, misplaced or stale value fails). Without the write count's check after the read, stale
 * and torn values come through.
 */
@Timeout(120)
class UnlockedGetsTest {
    private static final int KEYS = 20_000;
    private static final int WRITES = 60_000;
    /** Keys [0, HOT) take most writes and most gets, so that gets often read the leaf being changed. */
    private static final int HOT = 200;
    private static final int READERS = 2;

    @TempDir
    Path dir;

    @Test
    void getsRacingTheirPartitionsWriterReadOnlyValuesTheKeyHeld() throws Exception {
        // one partition, so every get meets the writer; some 12 MiB of leaves in the smallest region, 8 MiB, checkpointed often
        VarveConfig config = FixtureSupport.small(dir).partitions(1).checkpointFrequency(Duration.ofMillis(50)).build();
        byte[][] keys = new byte[KEYS][];
        for (int i = 0; i < KEYS; i++) keys[i] = utf8(String.format("key-%05d", i));
        // per key: the sequence of the write in flight, and of the last one done (negative: a remove); 1 is the preload
        AtomicLongArray begun = new AtomicLongArray(KEYS);
        AtomicLongArray done = new AtomicLongArray(KEYS);
        try (Varve store = Varve.open(config)) {
            Table t = store.table("t");
            for (int i = 0; i < KEYS; i++) {
                t.put(keys[i], stamped(keys[i], 0, 1, 500));
                begun.set(i, 1);
                done.set(i, 1);
            }
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong exact = new AtomicLong();
            ExecutorService pool = Executors.newFixedThreadPool(READERS + 1);
            try {
                List<Future<?>> readers = new ArrayList<>();
                for (int r = 0; r < READERS; r++) {
                    SplittableRandom random = new SplittableRandom(r);
                    readers.add(pool.submit(() -> {
                        while (!stop.get()) {
                            int i = pick(random);
                            if (read(t, keys[i], begun, done, i)) exact.incrementAndGet();
                        }
                        return null;
                    }));
                }
                Future<?> writer = pool.submit(() -> {
                    SplittableRandom random = new SplittableRandom(42);
                    for (long seq = 2; seq < WRITES + 2; seq++) {
                        int i = pick(random);
                        boolean remove = random.nextInt(8) == 0;
                        begun.set(i, remove ? -seq : seq);
                        if (remove) t.remove(keys[i]);
                        else t.put(keys[i], stamped(keys[i], 0, seq, random.nextInt(4) == 0 ? 1_000 + random.nextInt(2_000) : random.nextInt(600)));
                        done.set(i, remove ? -seq : seq);
                    }
                    return null;
                });
                writer.get(100, TimeUnit.SECONDS);
                stop.set(true);
                for (Future<?> f : readers) f.get(10, TimeUnit.SECONDS);
            } finally {
                stop.set(true);
                pool.shutdownNow();
            }
            assertTrue(exact.get() > 1_000, "gets with no write of their key in flight were checked exactly: " + exact.get());
            assertTrue(store.metrics().pagesEvicted() > 0, "pages were evicted under the gets");
            for (int i = 0; i < KEYS; i++) read(t, keys[i], begun, done, i); // quiet now: every get exact
        }
    }

    private static int pick(SplittableRandom random) {
        return random.nextInt(4) == 0 ? random.nextInt(KEYS) : random.nextInt(HOT);
    }

    /**
     * One get of key {@code i}, checked against the writes around it; true when none was in flight, so that the value
     * had to be exactly the last one done.
     */
    private static boolean read(Table t, byte[] key, AtomicLongArray begun, AtomicLongArray done, int i) {
        long doneBefore = done.get(i);
        long begunBefore = begun.get(i);
        byte[] v = t.get(key);
        long begunAfter = begun.get(i);
        long seq = v == null ? 0 : check(key, v)[1];
        if (doneBefore == begunBefore && begunBefore == begunAfter && done.get(i) == doneBefore) { // no write of the key in flight
            if (doneBefore > 0) assertEquals(doneBefore, seq, show(key) + ": the get returned another write than the last");
            else assertEquals(0, seq, show(key) + ": the get returned a value after its key was removed");
            return true;
        }
        // a write of it in flight: the value it replaced, or its own, or any later one's
        if (v != null) assertTrue(seq >= Math.abs(doneBefore) && seq <= Math.abs(begunAfter),
                show(key) + ": the get returned write " + seq + ", not one between " + Math.abs(doneBefore) + " and " + Math.abs(begunAfter));
        return false;
    }
}
