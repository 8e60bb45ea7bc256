package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A tiny checkpoint buffer under heavy writers: checkpoints keep running, writers are slowed (and the time is
 * reported) instead of failing or running out of memory, and every write is there afterwards. The writers run until
 * all of that was seen, not for a fixed time.
 */
@Timeout(300)
class ThrottleTest {
    /** Longest the writers run before the test gives up on seeing checkpoints throttle them. */
    private static final long WORKLOAD_LIMIT_NANOS = TimeUnit.SECONDS.toNanos(120);

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void tinyCheckpointBufferThrottlesWritersWithoutFailing(RecoveryMode mode) throws Exception {
        VarveConfig cfg = VarveConfig.builder().path(dir).dataRegionSize(32L << 20).partitions(4).recoveryMode(mode)
                .walSyncMode(WalSyncMode.LOG_ONLY).checkpointFrequency(Duration.ofMillis(5))
                .checkpointBufferSize(256L << 10).build();
        int threads = 2;
        int keys = 20_000;
        long[][] last = new long[threads][keys];
        try (Varve store = Varve.open(cfg)) {
            Table t = store.table("heavy");
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            AtomicBoolean stop = new AtomicBoolean();
            List<Future<?>> fs = new ArrayList<>();
            try {
                for (int w = 0; w < threads; w++) {
                    int id = w;
                    fs.add(pool.submit(() -> {
                        Random r = new Random(id);
                        byte[] v = new byte[300];
                        for (long seq = 1; !stop.get(); seq++) {
                            int k = r.nextInt(keys);
                            ByteBuffer.wrap(v).putLong(seq);
                            t.put(key(id, k), v);
                            last[id][k] = seq;
                        }
                        return null;
                    }));
                }
                awaitThrottledCheckpoints(store.metrics(), fs);
            } finally {
                stop.set(true);
                pool.shutdown();
            }
            for (Future<?> f : fs) f.get(60, TimeUnit.SECONDS);
            VarveMetrics m = store.metrics();
            System.out.println("throttle test (" + mode + "): " + m + "; last " + m.lastCheckpoint());
            assertTrue(m.checkpointsCompleted() > 3, "checkpoints kept running: " + m.checkpointsCompleted());
            assertTrue(m.copyOnWritePages() > 0, "writers hit pages of running checkpoints");
            assertTrue(m.throttledNanos() > 0, "writers were throttled, and the time is reported");
        }
        try (Varve store = Varve.open(cfg)) {
            Table t = store.table("heavy");
            for (int w = 0; w < threads; w++) {
                for (int k = 0; k < keys; k++) {
                    if (last[w][k] == 0) continue;
                    byte[] v = t.get(key(w, k));
                    assertArrayEquals(ByteBuffer.allocate(8).putLong(last[w][k]).array(), java.util.Arrays.copyOf(v, 8), "writer " + w + " key " + k);
                }
            }
        }
    }

    /**
     * Lets the writers run until checkpoints kept running under them, hit their pages and throttled them; fails if a
     * writer failed, or if that took more than {@link #WORKLOAD_LIMIT_NANOS} (something stopped).
     */
    private static void awaitThrottledCheckpoints(VarveMetrics m, List<Future<?>> writers) throws Exception {
        long deadline = System.nanoTime() + WORKLOAD_LIMIT_NANOS;
        while (m.checkpointsCompleted() <= 3 || m.copyOnWritePages() == 0 || m.throttledNanos() == 0) {
            for (Future<?> f : writers) if (f.isDone()) f.get(); // a writer that failed says why
            assertTrue(System.nanoTime() - deadline < 0, "checkpoints, copy-on-write and throttling did not all happen: " + m);
            Thread.sleep(10);
        }
    }

    private static byte[] key(int writer, int k) {
        return ("w" + writer + "-" + k).getBytes();
    }
}
