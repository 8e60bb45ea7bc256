package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A logged batch whose apply fails half-way (here a page read fails under memory pressure) leaves page memory
 * behind the WAL, and no checkpoint may then make it durable. A checkpoint that had already passed its check and was
 * waiting for the checkpoint lock while the batch was applied used to take the lock once the failed writer let go,
 * mark after the batch's record and write the half-applied pages: recovery then skipped the record, and the reopened
 * store held half the batch (a tree whose leaves named freed pages, in the case that found it). It now checks again
 * under the lock, and the reopen replays the batch whole.
 */
@Timeout(300)
@Isolated("counts the threads of every store in the JVM")
class FailedApplyCheckpointRaceTest {
    private static final int KEYS = 6000;

    @TempDir
    Path dir;

    private static byte[] key(int k) {
        return String.format("key-%06d", k).getBytes();
    }

    private static byte[] value(int k, int generation) {
        byte[] v = new byte[2000];
        Arrays.fill(v, (byte) (k + generation));
        return v;
    }

    /** Whether the store's checkpointer thread is parked on the checkpoint lock. */
    private static boolean checkpointerWaitsForTheLock() {
        return Thread.getAllStackTraces().entrySet().stream().anyMatch(e -> e.getKey().getName().startsWith("varve-checkpointer")
                && Arrays.stream(e.getValue()).anyMatch(f -> f.getClassName().contains("StampedLock")));
    }

    @Test
    void checkpointWaitingForTheLockDoesNotMakeAHalfAppliedBatchDurable() throws Exception {
        VarveConfig cfg = VarveConfig.builder().path(dir).dataRegionSize(8L << 20).partitions(1).walSyncMode(WalSyncMode.LOG_ONLY)
                .checkpointFrequency(Duration.ofHours(1)).checkpointWalVolume(1L << 30)
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
        AtomicBoolean armed = new AtomicBoolean();
        AtomicInteger reads = new AtomicInteger();
        CountDownLatch inApply = new CountDownLatch(1);
        HookedFileIOFactory io = new HookedFileIOFactory((op, file) -> {
            if (!armed.get() || op != HookedFileIOFactory.Op.READ || !file.toString().endsWith(".page") || reads.incrementAndGet() != 3) return;
            inApply.countDown(); // the batch has changed pages already; hold its apply until a checkpoint waits for the lock
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!checkpointerWaitsForTheLock() && System.nanoTime() < deadline) Thread.onSpinWait();
            throw new IOException("injected: page read fails");
        });
        Varve store = Varve.open(cfg, io);
        Table t = store.table("t");
        for (int k = 0; k < KEYS; k++) t.put(key(k), value(k, 0)); // 12 MiB: the first leaves are evicted
        store.checkpoint().get();
        armed.set(true);
        CompletableFuture<Void> batch = CompletableFuture.runAsync(() -> store.write(b -> {
            for (int k = 0; k < KEYS; k += KEYS / 40) b.put("t", key(k), value(k, 1));
        }));
        assertTrue(inApply.await(60, TimeUnit.SECONDS), "the batch never read a page");
        CompletableFuture<?> checkpoint = store.checkpoint();
        assertThrows(Exception.class, batch::join);
        try {
            checkpoint.get(60, TimeUnit.SECONDS);
        } catch (Exception refused) {
            // refused: page memory is behind the WAL
        }
        store.halt();

        try (Varve again = Varve.open(cfg)) {
            Table r = again.table("t");
            int generation = Arrays.equals(value(0, 1), r.get(key(0))) ? 1 : 0;
            for (int k = 0; k < KEYS; k += KEYS / 40)
                assertArrayEquals(value(k, generation), r.get(key(k)), "the batch is whole or absent: key " + k);
        }
    }
}
