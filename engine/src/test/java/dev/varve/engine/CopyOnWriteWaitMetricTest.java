package dev.varve.engine;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A batch that changes more pages of the running checkpoint than the checkpoint buffer has slots waits, page by page,
 * for the checkpoint to write pages and free slots: throttling by the buffer's fill, which {@code throttledNanos} (and
 * the checkpoint's own {@code throttledNanos}) must count. That wait went uncounted: only the wait before a write
 * started was.
 */
@Timeout(120)
class CopyOnWriteWaitMetricTest {
    private static final long HELD_MILLIS = 300;
    @TempDir
    Path dir;

    @Test
    void aWriteWaitingForACheckpointBufferSlotIsCountedAsThrottled() throws Exception {
        AtomicBoolean hold = new AtomicBoolean();
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        // once armed, the checkpoint's first page write waits for the test: every page of it stays to be written
        HookedFileIOFactory io = HookedFileIOFactory.holdingAPageWrite(hold, held, release, false);
        // 64 checkpoint-buffer slots; 200 values of 1,500 bytes fill about a hundred leaves
        try (Varve store = Varve.open(FixtureSupport.small(dir).dataRegionSize(32L << 20).checkpointBufferSize(256L << 10).partitions(1).build(), io)) {
            Table t = store.table("t");
            for (int k = 0; k < 200; k++) t.put(utf8(String.format("k%03d", k)), FixtureSupport.bytes(k, 1500));
            store.checkpoint().join();
            for (int k = 0; k < 200; k++) t.put(utf8(String.format("k%03d", k)), FixtureSupport.bytes(1000 + k, 1500));
            hold.set(true);
            CompletableFuture<CheckpointStats> checkpoint = store.checkpoint();
            assertTrue(held.await(60, TimeUnit.SECONDS), "the checkpoint got to its page writes");
            long before = store.metrics().throttledNanos();
            Thread[] writer = new Thread[1];
            CompletableFuture<Void> batch = CompletableFuture.runAsync(() -> {
                writer[0] = Thread.currentThread();
                store.write(b -> {
                    for (int k = 0; k < 200; k++) b.put("t", utf8(String.format("k%03d", k)), FixtureSupport.bytes(2000 + k, 1500));
                });
            });
            while (writer[0] == null || !HookedFileIOFactory.waitsForACheckpointBufferSlot(writer[0])) {
                assertTrue(!batch.isDone(), "the batch ended without waiting for a slot");
                Thread.onSpinWait();
            }
            Thread.sleep(HELD_MILLIS); // the writer waits all this time at least: the checkpoint writes nothing meanwhile
            release.countDown();
            batch.get(60, TimeUnit.SECONDS);
            CheckpointStats c = checkpoint.get(60, TimeUnit.SECONDS);
            long waited = store.metrics().throttledNanos() - before;
            assertTrue(waited >= TimeUnit.MILLISECONDS.toNanos(HELD_MILLIS),
                    "the writer waited " + HELD_MILLIS + " ms at least for a slot, " + TimeUnit.NANOSECONDS.toMillis(waited) + " ms were counted");
            assertTrue(c.throttledNanos() >= TimeUnit.MILLISECONDS.toNanos(HELD_MILLIS), "and the checkpoint's figure counts it: " + c);
        }
    }
}
