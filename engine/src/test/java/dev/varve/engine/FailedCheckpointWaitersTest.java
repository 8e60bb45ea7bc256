package dev.varve.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.StorageException;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A writer waiting for data-region head-room waits for a checkpoint to free it. When that checkpoint dies (a full
 * disk under the page files) no room will ever come: the writer must get the checkpoint's failure at once, not wait
 * out the two-minute head-room limit and then a generic "gave up waiting" — as must every later write (each used to
 * wait the limit again before it even looked at the store's failure).
 */
@Timeout(90)
class FailedCheckpointWaitersTest {
    @TempDir
    Path dir;

    @Test
    void writersWaitingForRoomGetTheFailedCheckpointsErrorAtOnce() throws Exception {
        CountDownLatch writerWaits = new CountDownLatch(1);
        AtomicBoolean armed = new AtomicBoolean();
        // once armed, the checkpoint's first page write holds until the writer waits for room, then fails: disk full
        HookedFileIOFactory io = new HookedFileIOFactory((op, file) -> {
            if (armed.get() && op == HookedFileIOFactory.Op.WRITE && file.getFileName().toString().endsWith(".page")) {
                try {
                    writerWaits.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                throw new IOException("No space left on device");
            }
        });
        VarveConfig cfg = VarveConfig.builder().path(dir).pageSize(4096).dataRegionSize(8L << 20).partitions(1)
                .recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE).walSyncMode(WalSyncMode.LOG_ONLY)
                .checkpointFrequency(Duration.ofHours(1)).checkpointWalVolume(1L << 30).checkpointDirtyRatio(0.9)
                .checkpointBufferSize(1L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
        AtomicInteger acked = new AtomicInteger();
        try (Varve store = Varve.open(cfg, io)) {
            Table t = store.table("t");
            Thread[] writer = new Thread[1];
            CompletableFuture<StorageException> failed = CompletableFuture.supplyAsync(() -> {
                writer[0] = Thread.currentThread();
                byte[] value = new byte[3000];
                armed.set(true);
                try {
                    for (int i = 0; ; i++) {
                        t.put(String.format("k%08d", i).getBytes(), value);
                        acked.incrementAndGet();
                    }
                } catch (StorageException e) {
                    return e;
                }
            });
            while (writer[0] == null || !waitsForRoom(writer[0])) Thread.onSpinWait();
            writerWaits.countDown();
            StorageException e = failed.get();
            assertTrue(e.getMessage().contains("checkpointer failed earlier"), e.getMessage());
            assertTrue(e.getMessage().contains("No space left on device"), e.getMessage());
            StorageException again = assertThrows(StorageException.class, () -> t.put("later".getBytes(), new byte[3000]));
            assertTrue(again.getMessage().contains("No space left on device"), again.getMessage());
            String failure = store.metrics().failure(); // what a read-mostly application (and /metrics, JMX) sees
            assertTrue(failure != null && failure.contains("No space left on device"), String.valueOf(failure));
        }
        try (Varve reopened = Varve.open(cfg)) {
            assertEquals(null, reopened.metrics().failure(), "a reopened store is sound");
            Table t = reopened.table("t");
            for (int i = 0; i < acked.get(); i++) assertEquals(3000, t.get(String.format("k%08d", i).getBytes()).length, "key " + i);
        }
    }

    private static boolean waitsForRoom(Thread t) {
        return Arrays.stream(t.getStackTrace()).anyMatch(f -> f.getMethodName().equals("awaitHeadroom"));
    }
}
